import { randomBytes } from 'node:crypto';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { createContentStore } from '../../shared/storage/store.factory';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

let env: TestEnv;
let gateway: RunningGateway | undefined;

afterAll(async () => {
  await gateway?.close();
  await env?.dropAll();
});

test('a first start on a bucket nobody created yet creates it, marks it, and serves content from it', async () => {
  const bucket = `filesync-new-${randomBytes(4).toString('hex')}`;
  env = await createTestEnv({ STORAGE_DRIVER: 's3', S3_BUCKET: bucket });
  gateway = await startGateway(env);

  const store = createContentStore(env.config) as S3ContentStore;
  await store.client.send(new HeadBucketCommand({ Bucket: bucket }));
  expect(await store.readMarker()).toMatch(/^[0-9a-f]{32}$/);
  const { api } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
  const created = await api.upload({}, { name: 'first.txt', content: 'in a new bucket' });
  expect(created.status).toBe(201);
  expect((await api.get(`/v1/files/${created.body.id}/content`)).text).toBe('in a new bucket');
});
