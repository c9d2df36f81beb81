import { ConfigError, loadConfig } from '../../shared/config';

const base = { JWT_SECRET: 'x'.repeat(40) };

describe('REDIS_CLUSTER_NODES', () => {
  test('a list of host:port becomes the cluster nodes', () => {
    const config = loadConfig({ ...base, REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b.internal:7001,[::1]:7002' });
    expect(config.redisClusterNodes).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-b.internal', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
  });

  test('absent, every use of Redis goes to REDIS_URL', () => {
    expect(loadConfig(base).redisClusterNodes).toBeUndefined();
  });

  test.each(['10.0.0.1', '10.0.0.1:0', 'redis://10.0.0.1:7000', 'a:70000'])('"%s" stops start-up naming the variable', (value) => {
    expect(() => loadConfig({ ...base, REDIS_CLUSTER_NODES: value })).toThrow(/REDIS_CLUSTER_NODES/);
  });
});

describe('STORAGE_DRIVER and S3_*', () => {
  test('local is the default, with no S3 settings', () => {
    expect(loadConfig(base)).toMatchObject({ storageDriver: 'local', s3: undefined });
  });

  test('s3 needs a bucket', () => {
    expect(() => loadConfig({ ...base, STORAGE_DRIVER: 's3' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, STORAGE_DRIVER: 's3' })).toThrow(/S3_BUCKET/);
  });

  test('an endpoint turns path-style addressing on unless told otherwise; the region defaults to us-east-1', () => {
    const config = loadConfig({ ...base, STORAGE_DRIVER: 's3', S3_BUCKET: 'content', S3_ENDPOINT: 'http://127.0.0.1:7480', S3_PREFIX: 'fs/' });
    expect(config.s3).toMatchObject({ bucket: 'content', prefix: 'fs/', endpoint: 'http://127.0.0.1:7480', region: 'us-east-1', forcePathStyle: true });
    expect(loadConfig({ ...base, STORAGE_DRIVER: 's3', S3_BUCKET: 'content' }).s3).toMatchObject({ endpoint: undefined, forcePathStyle: false });
  });

  test('static credentials are used but never appear when the configuration is printed', () => {
    const config = loadConfig({ ...base, STORAGE_DRIVER: 's3', S3_BUCKET: 'content', S3_ACCESS_KEY_ID: 'AKIAEXAMPLE', S3_SECRET_ACCESS_KEY: 'very-secret-value' });
    expect(config.s3?.credentials).toEqual({ accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'very-secret-value' });
    expect(JSON.stringify(config)).not.toContain('very-secret-value');
  });

  test('a key id without its secret is refused', () => {
    expect(() => loadConfig({ ...base, STORAGE_DRIVER: 's3', S3_BUCKET: 'content', S3_ACCESS_KEY_ID: 'AKIAEXAMPLE' })).toThrow(ConfigError);
  });

  test('a prefix that starts with a slash is refused', () => {
    expect(() => loadConfig({ ...base, STORAGE_DRIVER: 's3', S3_BUCKET: 'content', S3_PREFIX: '/fs/' })).toThrow(/S3_PREFIX/);
  });
});
