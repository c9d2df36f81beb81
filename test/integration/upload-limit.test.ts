import { randomBytes } from 'node:crypto';
import { Api } from '../support/client';
import { expectError } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { rawRequest } from '../support/raw.http';
import { TusRaw } from '../support/tus';

const LIMIT = 64 * 1024;
/** The one wording of "too large", with the limit, whatever the upload path. */
const TOO_LARGE = `the content is larger than the upload limit (${LIMIT} bytes)`;

describe('content over MAX_UPLOAD_BYTES gets one answer on every upload path', () => {
  let env: TestEnv;
  let gateway: RunningGateway;
  let api: Api;
  let token: string;
  let fileId: string;

  beforeAll(async () => {
    env = await createTestEnv({ MAX_UPLOAD_BYTES: String(LIMIT) });
    gateway = await startGateway(env);
    const admin = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
    api = admin.api;
    token = admin.token;
    const created = await api.upload({}, { name: 'small.bin', content: 'small' });
    expect(created.status).toBe(201);
    fileId = created.body.id;
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.dropAll();
  });

  test('multipart POST /v1/files', async () => {
    const res = await api.upload({}, { name: 'big.bin', content: randomBytes(LIMIT + 1) });
    expectError(res, 413, 'FILE_TOO_LARGE');
    expect(res.body.error.message).toBe(TOO_LARGE);
  });

  test('PUT content, with a Content-Length over the limit and with a chunked body that passes it', async () => {
    const declared = await rawRequest(gateway.baseUrl, 'PUT', `/v1/files/${fileId}/content`, {
      headers: { authorization: `Bearer ${token}`, 'content-length': LIMIT + 1 },
      endBody: false,
    });
    expect(declared.status).toBe(413);
    expect(declared.body.error).toEqual({ code: 'FILE_TOO_LARGE', message: TOO_LARGE });

    const streamed = await rawRequest(gateway.baseUrl, 'PUT', `/v1/files/${fileId}/content`, {
      headers: { authorization: `Bearer ${token}`, 'transfer-encoding': 'chunked' },
      chunks: [randomBytes(LIMIT), randomBytes(LIMIT)],
    });
    expect(streamed.status).toBe(413);
    expect(streamed.body.error).toEqual({ code: 'FILE_TOO_LARGE', message: TOO_LARGE });
  });

  test('tus: an Upload-Length over the limit', async () => {
    const tus = new TusRaw(api);
    const created = await tus.create(LIMIT + 1, { name: 'big.bin' });
    expectError(created, 413, 'FILE_TOO_LARGE');
    expect(created.body.error.message).toBe(TOO_LARGE);
  });
});
