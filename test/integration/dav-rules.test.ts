import { startGateway, ADMIN, type RunningGateway } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';
import { changesSince, feedCursorNow } from '../support/lifecycle';
import { basic, createAppPassword, DavClient, hrefs, type AppPassword } from '../support/dav';

const prop = (xml: string, name: string): string | undefined => new RegExp(`<${name}[^>]*>([^<]*)</${name}>`).exec(xml)?.[1];

/** The rules of the API that WebDAV requests must follow, beyond what litmus reaches. */
describe('WebDAV on the API\'s rules', () => {
  let stack: TestStack;
  let second: RunningGateway;
  let password: AppPassword;
  let dav: DavClient;

  beforeAll(async () => {
    stack = await startStack({ MAX_UPLOAD_BYTES: String(1024 * 1024) });
    second = await startGateway(stack.env);
    password = await createAppPassword(stack.admin, 'rules');
    dav = new DavClient(stack.gateway.baseUrl, basic(ADMIN.username, password.password));
  });
  afterAll(async () => {
    await second.close();
    await stack.close();
  });

  test('changes made over WebDAV reach the change feed, made by the app password\'s device', async () => {
    const cursor = await feedCursorNow(stack.admin);
    expect((await dav.request('MKCOL', '/dav/feed')).status).toBe(201);
    expect((await dav.put('/dav/feed/a.txt', 'one')).status).toBe(201);
    expect((await dav.put('/dav/feed/a.txt', 'two')).status).toBe(204);
    expect((await dav.request('MOVE', '/dav/feed/a.txt', { headers: { destination: '/dav/feed/b.txt' } })).status).toBe(201);
    const changes = await changesSince(stack.admin, cursor);
    const file = [...changes.values()].find((c) => c.name === 'b.txt')!;
    expect(file).toMatchObject({ type: 'file', deleted: false, size: 3 });
    expect(file.rev).toBeGreaterThanOrEqual(3);
    const folder = [...changes.values()].find((c) => c.name === 'feed')!;
    expect(file.parentId).toBe(folder.id);
    expect(file.deviceId).toBe(password.deviceId);
    expect(folder.deviceId).toBe(password.deviceId);

    // Every op was recorded for the app password's device, and the content stored under its folder.
    const traces = await stack.env.db('operation_traces').whereIn('resource_id', [file.id, folder.id]).select('device_id', 'op_type');
    expect(traces.map((t) => t.op_type).sort()).toEqual(['create', 'update']);
    expect(new Set(traces.map((t) => t.device_id))).toEqual(new Set([password.deviceId]));
    const row = await stack.env.db('resources').where({ id: file.id }).first('storage_key');
    expect(row.storage_key.startsWith(`${password.deviceId}/`)).toBe(true);
    // The PUT over the file was the API's content replacement: the replaced bytes are kept as a version.
    const versions = await stack.admin.get(`/v1/files/${file.id}/versions`);
    expect(versions.body.items.map((v: { size: number; deviceId: string }) => [v.size, v.deviceId])).toEqual([[3, password.deviceId]]);

    expect((await dav.request('DELETE', '/dav/feed')).status).toBe(204);
    const trash = await stack.admin.get('/v1/trash?limit=100');
    expect(trash.body.items.map((i: { id: string }) => i.id)).toEqual(expect.arrayContaining([folder.id, file.id]));
    const deleted = await changesSince(stack.admin, cursor);
    expect(deleted.get(file.id)).toMatchObject({ deleted: true, deviceId: password.deviceId });
  });

  test('another user\'s tree is invisible', async () => {
    expect((await dav.put('/dav/mine.txt', 'secret')).status).toBe(201);
    const other = await stack.admin.createUser('dav-other');
    const otherPassword = await createAppPassword(other.api, 'other');
    const otherDav = new DavClient(stack.gateway.baseUrl, basic('dav-other', otherPassword.password));
    const listing = await otherDav.propfind('/dav/', '1');
    expect(listing.status).toBe(207);
    expect(hrefs(listing.text)).toEqual(['/dav/']);
    expect((await otherDav.request('GET', '/dav/mine.txt')).status).toBe(404);
    expect((await otherDav.request('DELETE', '/dav/mine.txt')).status).toBe(404);
    // A password is the user's own: another username with it is refused.
    expect((await new DavClient(stack.gateway.baseUrl, basic(ADMIN.username, otherPassword.password)).propfind('/dav/', '0')).status).toBe(401);
  });

  test('names are compared and stored after NFC', async () => {
    const nfd = encodeURIComponent('cafe\u0301.txt');
    const nfc = encodeURIComponent('caf\u00e9.txt');
    expect((await dav.put(`/dav/${nfd}`, 'crème')).status).toBe(201);
    const get = await dav.request('GET', `/dav/${nfc}`);
    expect([get.status, get.text]).toEqual([200, 'crème']);
    expect((await dav.put(`/dav/${nfc}`, 'brûlée')).status).toBe(204);
    const files = await stack.admin.get('/v1/files?limit=1000');
    expect(files.body.items.filter((f: { name: string }) => f.name.normalize('NFD') === 'cafe\u0301.txt').map((f: { name: string }) => f.name)).toEqual(['caf\u00e9.txt']);
    const found = await dav.propfind(`/dav/${nfd}`, '0');
    expect(prop(found.text, 'D:displayname')).toBe('caf\u00e9.txt');
    // A name the API refuses is refused here too.
    expect((await dav.put('/dav/bad%01name', 'x')).status).toBe(400);
  });

  test('properties carry the API\'s id, rev, sha256 and ETag; Depth infinity is refused', async () => {
    expect((await dav.put('/dav/props.txt', 'hello')).status).toBe(201);
    const api = (await stack.admin.get('/v1/files?limit=1000')).body.items.find((f: { name: string }) => f.name === 'props.txt');
    const res = await dav.propfind('/dav/props.txt', '0');
    expect(res.status).toBe(207);
    expect(prop(res.text, 'fs:id')).toBe(api.id);
    expect(prop(res.text, 'fs:rev')).toBe(String(api.rev));
    expect(prop(res.text, 'fs:sha256')).toBe(api.sha256);
    expect(prop(res.text, 'D:getetag')).toBe(`"${api.sha256}"`);
    expect(prop(res.text, 'D:getcontentlength')).toBe('5');
    const content = await stack.admin.get(`/v1/files/${api.id}/content`);
    expect(content.headers.get('etag')).toBe(`"${api.sha256}"`);

    const infinity = await dav.propfind('/dav/', 'infinity');
    expect(infinity.status).toBe(403);
    expect(infinity.text).toContain('propfind-finite-depth');
  });

  test('quota-used-bytes reports the caller\'s stored bytes', async () => {
    const res = await dav.propfind('/dav/', '0', '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/></D:prop></D:propfind>');
    const usage = await stack.admin.get('/v1/users/me/usage');
    expect(res.status).toBe(207);
    expect(Number(prop(res.text, 'D:quota-used-bytes'))).toBe(usage.body.usedBytes);
    expect(usage.body.usedBytes).toBeGreaterThan(0);
    // No quota: nothing to report as available.
    expect(res.text).not.toContain('quota-available-bytes>');
  });

  test('a write over the quota is refused with 507, and the quota properties report what is left', async () => {
    const user = await stack.admin.createUser('dav-quota');
    expect((await stack.admin.patch(`/v1/users/${user.userId}`, { quotaBytes: 1000 })).status).toBe(200);
    const quotaPassword = await createAppPassword(user.api, 'quota');
    const quotaDav = new DavClient(stack.gateway.baseUrl, basic('dav-quota', quotaPassword.password));
    expect((await quotaDav.put('/dav/fits.bin', Buffer.alloc(600))).status).toBe(201);
    const refused = await quotaDav.put('/dav/too-much.bin', Buffer.alloc(600));
    expect(refused.status).toBe(507);
    expect(refused.text).toContain('quota-not-exceeded');
    expect((await quotaDav.request('HEAD', '/dav/too-much.bin')).status).toBe(404);
    const res = await quotaDav.propfind(
      '/dav/',
      '0',
      '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/><D:quota-available-bytes/></D:prop></D:propfind>',
    );
    expect([prop(res.text, 'D:quota-used-bytes'), prop(res.text, 'D:quota-available-bytes')]).toEqual(['600', '400']);
  });

  test('PUT: 409 without the parent collection, 413 over MAX_UPLOAD_BYTES, 412 on a stale If-Match; nothing is created', async () => {
    expect((await dav.put('/dav/missing/x.txt', 'x')).status).toBe(409);
    expect((await dav.put('/dav/big.bin', Buffer.alloc(1024 * 1024 + 1))).status).toBe(413);
    expect((await dav.request('HEAD', '/dav/big.bin')).status).toBe(404);
    expect((await dav.put('/dav/cond.txt', 'one')).status).toBe(201);
    expect((await dav.put('/dav/cond.txt', 'two', { 'if-match': '"0000"' })).status).toBe(412);
    expect((await dav.put('/dav/cond.txt', 'two', { 'if-none-match': '*' })).status).toBe(412);
    expect((await dav.request('GET', '/dav/cond.txt')).text).toBe('one');
  });

  test('MOVE keeps the resource\'s id; COPY makes a new one with the same content', async () => {
    expect((await dav.put('/dav/orig.txt', 'same bytes')).status).toBe(201);
    const before = prop((await dav.propfind('/dav/orig.txt', '0')).text, 'fs:id');
    expect((await dav.request('COPY', '/dav/orig.txt', { headers: { destination: `${stack.gateway.baseUrl}/dav/copy.txt` } })).status).toBe(201);
    expect((await dav.request('MOVE', '/dav/orig.txt', { headers: { destination: '/dav/moved.txt' } })).status).toBe(201);
    const moved = await dav.propfind('/dav/moved.txt', '0');
    const copy = await dav.propfind('/dav/copy.txt', '0');
    expect(prop(moved.text, 'fs:id')).toBe(before);
    expect(prop(copy.text, 'fs:id')).not.toBe(before);
    expect(prop(copy.text, 'fs:sha256')).toBe(prop(moved.text, 'fs:sha256'));
  });

  test('a dead property is kept up to 64 KiB, and goes with its resource when it is purged', async () => {
    expect((await dav.put('/dav/dead.txt', 'x')).status).toBe(201);
    const patch = (value: string) =>
      dav.request('PROPPATCH', '/dav/dead.txt', {
        body: `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><p:note xmlns:p="urn:example">${value}</p:note></D:prop></D:set></D:propertyupdate>`,
      });
    const big = await patch('x'.repeat(70 * 1024));
    expect(big.status).toBe(207);
    expect(big.text).toContain('HTTP/1.1 507');
    const ok = await patch('kept');
    expect(ok.text).toContain('HTTP/1.1 200 OK');
    const read = await dav.propfind('/dav/dead.txt', '0', '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><note xmlns="urn:example"/></D:prop></D:propfind>');
    expect(read.text).toMatch(/<note xmlns="urn:example">kept<\/note>/);

    const id = prop((await dav.propfind('/dav/dead.txt', '0')).text, 'fs:id');
    const stored = () => stack.env.db('dav_properties').where({ resource_id: id }).select('local_name');
    expect(await stored()).toEqual([{ local_name: 'note' }]);
    expect((await dav.request('DELETE', '/dav/dead.txt')).status).toBe(204);
    expect((await stack.admin.delete(`/v1/trash/${id}`)).status).toBe(204);
    expect(await stored()).toEqual([]);
  });

  test('a lock taken on one gateway holds on another', async () => {
    expect((await dav.put('/dav/locked.txt', 'x')).status).toBe(201);
    const lock = await dav.request('LOCK', '/dav/locked.txt', {
      headers: { timeout: 'Second-60', 'content-type': 'application/xml' },
      body: '<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>test</D:owner></D:lockinfo>',
    });
    expect(lock.status).toBe(200);
    const token = lock.headers.get('lock-token')!;
    const elsewhere = new DavClient(second.baseUrl, basic(ADMIN.username, password.password));
    const refused = await elsewhere.put('/dav/locked.txt', 'y');
    expect(refused.status).toBe(423);
    expect(refused.text).toContain('lock-token-submitted');
    expect((await elsewhere.request('DELETE', '/dav/locked.txt')).status).toBe(423);
    expect((await elsewhere.put('/dav/locked.txt', 'y', { if: `(${token})` })).status).toBe(204);
    expect((await elsewhere.request('UNLOCK', '/dav/locked.txt', { headers: { 'lock-token': token } })).status).toBe(204);
    expect((await dav.put('/dav/locked.txt', 'z')).status).toBe(204);
  });
});
