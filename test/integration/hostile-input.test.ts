import net from 'node:net';
import { newId } from '../../shared/ids';
import { PART_SIZE } from '../../shared/storage/s3/s3.store';
import { Api, type ApiResponse } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { expectError } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { startInProcessWorkers, type OpenWorker } from '../support/workers';

/**
 * What a hostile or broken client can send: odd names, odd bytes, odd HTTP. Every refusal is the
 * API's JSON, and leaves nothing in the store, on either driver.
 */
describe.each(DRIVERS)('hostile input on the %s driver', (driver) => {
  let env: TestEnv;
  let stored: StoredContent;
  let gateway: RunningGateway;
  let workers: OpenWorker;
  let anon: Api;
  let admin: Api;
  let token: string;
  let userId: string;

  beforeAll(async () => {
    env = await createTestEnv(onDriver(driver));
    stored = new StoredContent(env);
    gateway = await startGateway(env);
    workers = await startInProcessWorkers(env);
    anon = new Api(gateway.baseUrl);
    const session = await anon.login(ADMIN.username, ADMIN.password);
    admin = session.api;
    token = session.token;
    userId = session.userId;
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await workers?.close();
    await gateway?.close();
    await env?.dropAll();
  });

  /** Sends raw bytes on a fresh connection and returns everything the server wrote before closing. */
  function rawExchange(baseUrl: string, request: Buffer | string, timeoutMs = 15000): Promise<string> {
    const { port } = new URL(baseUrl);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let out = '';
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no close within ${timeoutMs} ms; got: ${out}`));
      }, timeoutMs);
      socket.on('data', (d: Buffer) => (out += d.toString('utf8')));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(out);
      });
      socket.write(request);
    });
  }

  /** The status and JSON body of a raw HTTP/1.1 response. */
  function parseRaw(raw: string): { status: number; contentType: string; body: any } {
    const [head, ...rest] = raw.split('\r\n\r\n');
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1]);
    const contentType = /\r\ncontent-type: *([^\r\n]*)/i.exec(head ?? '')?.[1] ?? '';
    return { status, contentType, body: JSON.parse(rest.join('\r\n\r\n')) };
  }

  function expectRawError(raw: string, status: number, code: string) {
    const res = parseRaw(raw);
    expect(res.status).toBe(status);
    expect(res.contentType).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: { code, message: expect.any(String) } });
  }

  /** A multipart upload built byte by byte, so the file name's bytes are exactly the test's. */
  function multipart(fileHeader: Buffer, content = 'hello', fields: Array<[string, Buffer]> = []) {
    const boundary = `----hostile${newId()}`;
    const parts: Buffer[] = [];
    for (const [name, value] of fields) {
      parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`), value, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from(`--${boundary}\r\n`), fileHeader, Buffer.from(`\r\nContent-Type: text/plain\r\n\r\n${content}\r\n--${boundary}--\r\n`));
    return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
  }

  const upload = (form: { body: Buffer; contentType: string }) =>
    admin.request('POST', '/v1/files', { body: form.body, headers: { 'content-type': form.contentType } });

  const disposition = (filename: Buffer) => Buffer.concat([Buffer.from('Content-Disposition: form-data; name="file"; filename="'), filename, Buffer.from('"')]);

  async function expectNothingStored(name: string) {
    expect(await env.db('resources').where({ user_id: userId }).andWhere('name', 'like', `%${name}%`).first()).toBeUndefined();
    expect(await stored.stagingEntries()).toEqual([]);
  }

  describe('names', () => {
    test('invalid UTF-8 in a multipart file name gives 400 INVALID_REQUEST, not a name with U+FFFD', async () => {
      const name = Buffer.concat([Buffer.from('bad-'), Buffer.from([0xff, 0xfe]), Buffer.from('.txt')]);
      expectError(await upload(multipart(disposition(name))), 400, 'INVALID_REQUEST');
      await expectNothingStored('bad-');
      expect(await env.db('resources').where('name', 'like', '%\uFFFD%').first()).toBeUndefined();
    });

    test('a UTF-8-encoded lone surrogate (CESU bytes ED A0 80) in a file name gives 400', async () => {
      const name = Buffer.concat([Buffer.from('cesu-'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('.txt')]);
      expectError(await upload(multipart(disposition(name))), 400, 'INVALID_REQUEST');
      await expectNothingStored('cesu-');
    });

    test("invalid UTF-8 in an RFC 5987 filename*=UTF-8'' name gives 400", async () => {
      const header = Buffer.from(`Content-Disposition: form-data; name="file"; filename*=UTF-8''ext-%FF%FE.txt`);
      expectError(await upload(multipart(header)), 400, 'INVALID_REQUEST');
      await expectNothingStored('ext-');
    });

    test('invalid UTF-8 in the name field gives 400', async () => {
      const form = multipart(disposition(Buffer.from('fine.txt')), 'x', [['name', Buffer.concat([Buffer.from('field-'), Buffer.from([0xc3, 0x28])])]]);
      expectError(await upload(form), 400, 'INVALID_REQUEST');
      await expectNothingStored('field-');
      await expectNothingStored('fine.txt');
    });

    test('a name field refused after content larger than one S3 part was received leaves no staged bytes (objects or multipart uploads)', async () => {
      const boundary = `----hostile${newId()}`;
      const body = Buffer.concat([
        Buffer.from(`--${boundary}\r\n`),
        disposition(Buffer.from('large-fine.bin')),
        Buffer.from('\r\nContent-Type: application/octet-stream\r\n\r\n'),
        Buffer.alloc(PART_SIZE + 1024 * 1024, 5),
        Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n`),
        Buffer.from([0x6c, 0x61, 0x74, 0x65, 0x2d, 0xc3, 0x28]),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      expectError(await upload({ body, contentType: `multipart/form-data; boundary=${boundary}` }), 400, 'INVALID_REQUEST');
      await expectNothingStored('large-fine');
      await expectNothingStored('late-');
    });

    test('valid UTF-8 names still go through, byte for byte (NFC)', async () => {
      const res = await upload(multipart(disposition(Buffer.from('café-ünïcode-名前.txt')), 'x', [['name', Buffer.from('naïve-名前.txt')]]));
      expect(res.status).toBe(201);
      expect(res.body.name).toBe('naïve-名前.txt');
      const fromFile = await upload(multipart(disposition(Buffer.from('café-ünïcode-名前.txt'))));
      expect(fromFile.status).toBe(201);
      expect(fromFile.body.name).toBe('café-ünïcode-名前.txt');
    });

    test.each([
      ['202E', '\u202E'],
      ['202A', '\u202A'],
      ['202D', '\u202D'],
      ['2066', '\u2066'],
      ['2069', '\u2069'],
    ])('a bidi control (U+%s) in an upload name gives 400', async (_code, bidi) => {
      const name = `evil${bidi}txt.exe`;
      expectError(await upload(multipart(disposition(Buffer.from(name)))), 400, 'INVALID_REQUEST');
      expectError(await admin.upload({ name }, { name: 'plain.txt', content: 'x' }), 400, 'INVALID_REQUEST');
      await expectNothingStored('evil');
    });

    test('a lone surrogate or a bidi control in a sync op name fails that op with INVALID_REQUEST; nothing is stored', async () => {
      const cases = ['"lone-\\ud800.txt"', '"lone-\\udfff"', '"pair-ok-\\ud83d"', '"rtl-\\u202e-gpj.exe"', '"iso-\\u2067-x"'];
      for (const [i, name] of cases.entries()) {
        const id = newId();
        const body = `{"ops":[{"opId":${9000 + i},"type":"create","resourceId":"${id}","payload":{"resourceType":"file","name":${name}}}]}`;
        const res = await admin.request('POST', '/v1/sync/ops', { json: body });
        expect(res.status).toBe(200);
        expect(res.body.applied).toEqual([]);
        expect(res.body.failed).toMatchObject({ opId: 9000 + i, error: { code: 'INVALID_REQUEST' } });
        expect(await env.db('resources').where({ id }).first()).toBeUndefined();
      }
      // A renamed resource is held to the same rule.
      const id = newId();
      const created = await admin.post('/v1/sync/ops', { ops: [{ opId: 9100, type: 'create', resourceId: id, payload: { resourceType: 'folder', name: 'rename-me' } }] });
      expect(created.body.applied).toHaveLength(1);
      const renamed = await admin.request('POST', '/v1/sync/ops', { json: `{"ops":[{"opId":9101,"type":"update","resourceId":"${id}","payload":{"name":"x\\udc00"}}]}` });
      expect(renamed.body.failed).toMatchObject({ opId: 9101, error: { code: 'INVALID_REQUEST' } });
      expect((await env.db('resources').where({ id }).first()).name).toBe('rename-me');
      // A proper surrogate pair (an emoji) is a character like any other.
      const emoji = newId();
      const ok = await admin.request('POST', '/v1/sync/ops', { json: `{"ops":[{"opId":9102,"type":"create","resourceId":"${emoji}","payload":{"resourceType":"folder","name":"smile-\\ud83d\\ude00"}}]}` });
      expect(ok.body.applied).toHaveLength(1);
      expect((await env.db('resources').where({ id: emoji }).first()).name).toBe('smile-😀');
    });
  });

  describe('errors the HTTP layer answers itself', () => {
    test('oversized request headers get 431 with the JSON error body', async () => {
      const raw = await rawExchange(gateway.baseUrl, `GET /v1/files HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expectRawError(raw, 431, 'INVALID_REQUEST');
    });

    test('an unknown method (FOO /v1/files) gets 400 with the JSON error body', async () => {
      expectRawError(await rawExchange(gateway.baseUrl, 'FOO /v1/files HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'INVALID_REQUEST');
    });

    test('a malformed request line or header gets 400 with the JSON error body', async () => {
      expectRawError(await rawExchange(gateway.baseUrl, 'GET /v1/files HTTP/9.9 extra\r\n\r\n'), 400, 'INVALID_REQUEST');
      expectRawError(await rawExchange(gateway.baseUrl, 'GET /v1/files HTTP/1.1\r\nBad Header\r\n\r\n'), 400, 'INVALID_REQUEST');
    });

    test.each([['PROPFIND'], ['SEARCH'], ['LINK'], ['PURGE'], ['MKCOL']])('%s /v1/files, a method no route serves, gets a JSON error', async (method) => {
      const res = await admin.request(method, '/v1/files');
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
    });

    test('a request whose headers do not arrive in time gets 408 with the JSON error body', async () => {
      const slow = await startGateway(env, { headersTimeoutMs: 300, requestTimeoutMs: 600, timeoutCheckMs: 100 });
      try {
        const raw = await rawExchange(slow.baseUrl, 'GET /v1/files HTTP/1.1\r\nHost: x\r\n');
        expectRawError(raw, 408, 'INVALID_REQUEST');
      } finally {
        await slow.close();
      }
    });

    test("errors of the dashboard's own API use the contract's body", async () => {
      const missing = await admin.get('/admin/queues/api/queues/no-such-queue/jobs/1');
      expect(missing.status).toBeGreaterThanOrEqual(400);
      expect(missing.headers.get('content-type')).toMatch(/^application\/json/);
      expect(missing.body).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
      const badJson = await admin.request('PUT', '/admin/queues/api/queues/sync-0/pause', { json: '{oops' });
      expect(badJson.status).toBeGreaterThanOrEqual(400);
      expect(badJson.body).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
    });
  });

  describe('request values', () => {
    test('snapshot after above 9999-12-31T23:59:59.999Z gives 400; the last instant itself is accepted', async () => {
      expectError(await admin.get('/v1/sync/permissions?after=253402300800000'), 400, 'INVALID_REQUEST');
      expectError(await admin.get('/v1/sync/permissions?after=8640000000000000'), 400, 'INVALID_REQUEST');
      const last = await admin.get('/v1/sync/permissions?after=253402300799999');
      expect(last.status).toBe(200);
      expect(last.body.items).toEqual([]);
    });

    const nested = (depth: number) => `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;

    test.each([
      ['POST', '/v1/auth/login', false],
      ['POST', '/v1/devices', false],
      ['POST', '/v1/users', true],
      ['POST', '/v1/sync/ops', true],
    ])('a JSON body nested 5,000 levels deep on %s %s gets 400 saying it is nested too deeply', async (method, url, authed) => {
      const client = authed ? admin : anon;
      const res: ApiResponse = await client.request(method, url, { json: nested(5000) });
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(/nested too deeply/);
    });

    test('brackets inside strings do not count as nesting', async () => {
      const name = `${'['.repeat(100)}x${']'.repeat(100)}`.slice(0, 200);
      const res = await admin.post('/v1/sync/ops', { ops: [{ opId: 9200, type: 'create', resourceId: newId(), payload: { resourceType: 'folder', name } }] });
      expect(res.status).toBe(200);
      expect(res.body.applied).toHaveLength(1);
    });
  });

  describe('WebDAV XML bodies', () => {
    const propfind = (body: string) =>
      admin.request('PROPFIND', '/dav/', { body: Buffer.from(body), headers: { depth: '0', 'content-type': 'application/xml' } });

    test('a body nested 20,000 deep gets 400 at its first element too deep, ahead of a broken tail', async () => {
      const res = await propfind(`<D:propfind xmlns:D="DAV:">${'<D:a>'.repeat(20_000)}</wrong>`);
      expect(res.status).toBe(400);
      expect(res.text).toMatch(/nested deeper than 64/);
    });

    test('a body of 10,001 elements, or of 10,001 attributes, gets 400', async () => {
      const elements = await propfind(`<D:propfind xmlns:D="DAV:"><D:prop>${'<D:x/>'.repeat(9_999)}</D:prop></D:propfind>`);
      expect([elements.status, elements.text]).toEqual([400, expect.stringMatching(/more than 10000 elements/)]);
      const attributes = await propfind(`<D:propfind xmlns:D="DAV:"><D:prop>${'<D:x a="" b=""/>'.repeat(5_000)}</D:prop></D:propfind>`);
      expect([attributes.status, attributes.text]).toEqual([400, expect.stringMatching(/more than 10000 attributes/)]);
    });

    test('a PROPPATCH with a property nested past the limit stores nothing, and the tree stays readable', async () => {
      const value = `${'<p:n>'.repeat(1_400)}${'</p:n>'.repeat(1_400)}`;
      const body = `<D:propertyupdate xmlns:D="DAV:" xmlns:p="urn:p"><D:set><D:prop>${value}</D:prop></D:set></D:propertyupdate>`;
      const res = await admin.request('PROPPATCH', '/dav/', { body: Buffer.from(body), headers: { 'content-type': 'application/xml' } });
      expect(res.status).toBe(400);
      expect(await env.db('dav_properties').where({ user_id: userId }).select('local_name')).toEqual([]);
      expect((await propfind('<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>')).status).toBe(207);
    });
  });

  describe('share links, public side', () => {
    test('odd tokens, odd parameters and odd bodies get the contract JSON with the public headers, and store nothing', async () => {
      const folder = await admin.post('/v1/sync/ops', {
        ops: [{ opId: 9001, type: 'create', resourceId: 'c'.repeat(32), payload: { resourceType: 'folder', name: 'hostile-drop' } }],
      });
      expect(folder.status).toBe(200);
      const drop = (await admin.post('/v1/links', { resourceId: 'c'.repeat(32), access: 'upload' })).body;
      const read = (await admin.post('/v1/links', { resourceId: 'c'.repeat(32) })).body;
      const before = await stored.keys();
      const cases: Array<[string, string, RequestInit?]> = [
        ['GET', `/v1/public/${'A'.repeat(5000)}`],
        ['GET', '/v1/public/%00%ff%2e%2e'],
        ['GET', '/v1/public/..%2f..%2fetc%2fpasswd/content'],
        ['GET', `/v1/public/${read.token}/items?folderId=a&folderId=b`],
        ['GET', `/v1/public/${read.token}/items?limit=-1`],
        ['GET', `/v1/public/${read.token}/content?fileId=${'z'.repeat(32)}`],
        ['GET', `/v1/public/${read.token}/archive?folderId=%00`],
        ['POST', `/v1/public/${read.token}/unlock`, { body: '{"password": ', headers: { 'content-type': 'application/json' } }],
        ['POST', `/v1/public/${read.token}/unlock`, { body: JSON.stringify({ password: ['a'] }), headers: { 'content-type': 'application/json' } }],
        ['POST', `/v1/public/${drop.token}/files`, { body: 'not multipart', headers: { 'content-type': 'text/plain' } }],
        ['POST', `/v1/public/${drop.token}/files`, { body: '--x\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc', headers: { 'content-type': 'multipart/form-data; boundary=x' } }],
        ['POST', `/v1/public/${drop.token}/files`, { body: '--x\r\nContent-Disposition: form-data; name="file"; filename=".."\r\n\r\nabc\r\n--x--\r\n', headers: { 'content-type': 'multipart/form-data; boundary=x' } }],
      ];
      for (const [method, url, init] of cases) {
        const res = await fetch(`${gateway.baseUrl}${url}`, { method, ...init });
        expect([400, 401, 403, 404].includes(res.status) ? url : `${url} answered ${res.status}`).toBe(url);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        const body = (await res.json()) as { error: { code: string } };
        expect(typeof body.error.code).toBe('string');
        if (url.startsWith('/v1/public/') && res.status !== 404) expect(res.headers.get('cache-control')).toBe('no-store');
      }
      expect(await stored.keys()).toEqual(before);
      expect((await admin.get('/v1/files?folderId=' + 'c'.repeat(32))).body.total).toBe(0);
    });
  });

  test('the token used here is a real one (guards the tests above against passing for the wrong reason)', async () => {
    expect((await anon.get('/v1/files', { authorization: `bearer ${token}` })).status).toBe(200);
  });
});
