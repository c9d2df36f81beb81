import { ConfigError, loadConfig } from '../../shared/config';

/** S3_DOWNLOADS and S3_PUBLIC_ENDPOINT as the configuration reads them. */

const S3 = { STORAGE_DRIVER: 's3', S3_BUCKET: 'filesync-content', JWT_SECRET: 'x'.repeat(40) };

test('downloads are proxied unless S3_DOWNLOADS says redirect', () => {
  expect(loadConfig(S3).s3).toMatchObject({ downloads: 'proxy', publicEndpoint: undefined });
  expect(loadConfig({ ...S3, S3_DOWNLOADS: 'redirect', S3_PUBLIC_ENDPOINT: 'https://s3.example.com' }).s3).toMatchObject({
    downloads: 'redirect',
    publicEndpoint: 'https://s3.example.com',
  });
});

test.each([
  ['S3_DOWNLOADS', 'presigned'],
  ['S3_PUBLIC_ENDPOINT', 'ftp://s3.example.com'],
  ['S3_PUBLIC_ENDPOINT', 'https://s3.example.com/?x=1'],
  ['S3_PUBLIC_ENDPOINT', 'not a url'],
])('%s=%s is refused, naming the variable', (name, value) => {
  expect(() => loadConfig({ ...S3, [name]: value })).toThrow(ConfigError);
  expect(() => loadConfig({ ...S3, [name]: value })).toThrow(name);
});
