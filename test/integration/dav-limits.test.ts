import http from 'node:http';
import { SaxesParser } from 'saxes';
import { DavLockStore, MAX_LOCK_SECONDS } from '../../services/gateway/dav/dav.locks';
import { createLogger } from '../../shared/logger';
import { DavClient, type DavResponse } from '../support/dav';
import { startStack, type TestStack } from '../support/stack';

const PROPFIND = (inner: string) => `<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:x="urn:x"><D:prop>${inner}</D:prop></D:propfind>`;
const PATCH = (sets: string[], removes: string[] = []) =>
  `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:p="urn:example">${sets.map((s) => `<D:set><D:prop>${s}</D:prop></D:set>`).join('')}${removes
    .map((r) => `<D:remove><D:prop>${r}</D:prop></D:remove>`)
    .join('')}</D:propertyupdate>`;
const LOCKINFO = (scope: 'shared' | 'exclusive', owner = 'me') =>
  `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:${scope}/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>${owner}</D:owner></D:lockinfo>`;

/** Parses XML as a strict, namespace-aware client would; throws on the first error. */
function strictParse(xml: string): Array<{ uri: string; local: string }> {
  const parser = new SaxesParser({ xmlns: true });
  const seen: Array<{ uri: string; local: string }> = [];
  parser.on('error', (err) => {
    throw err;
  });
  parser.on('opentag', (t) => void seen.push({ uri: t.uri ?? '', local: t.local ?? '' }));
  parser.write(xml).close();
  return seen;
}

/** A request whose body is sent in parts: the response, if any, is collected as it comes. */
function openRequest(baseUrl: string, method: string, path: string, headers: Record<string, string>) {
  const url = new URL(path, baseUrl);
  const req = http.request({ host: url.hostname, port: url.port, method, path: url.pathname, headers, agent: false });
  const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
  });
  req.flushHeaders();
  return { req, response };
}

/** The limits WebDAV keeps under hostile input: XML bodies, dead properties and locks. */
describe('WebDAV limits', () => {
  let stack: TestStack;
  let dav: DavClient;
  let auth: Record<string, string>;

  beforeAll(async () => {
    stack = await startStack();
    auth = { authorization: `Bearer ${stack.admin.token}` };
    dav = new DavClient(stack.gateway.baseUrl, auth.authorization!);
    expect((await dav.request('MKCOL', '/dav/limits')).status).toBe(201);
  });
  afterAll(async () => {
    await stack.close();
  });

  const propfind = (body: string): Promise<DavResponse> => dav.propfind('/dav/limits', '0', body);
  const patch = (path: string, sets: string[], removes: string[] = []) => dav.request('PROPPATCH', path, { body: PATCH(sets, removes) });
  const stored = async (path: string) => {
    const id = /<fs:id>([^<]*)<\/fs:id>/.exec((await dav.propfind(path, '0')).text)![1];
    return stack.env.db('dav_properties').where({ resource_id: id }).orderBy('local_name').select('local_name', 'value');
  };

  describe('XML bodies', () => {
    test('a body nested deeper than 64 elements is refused with 400 before the rest of it arrives', async () => {
      const open = openRequest(stack.gateway.baseUrl, 'PROPFIND', '/dav/limits', { ...auth, depth: '0', 'content-type': 'application/xml' });
      // 20,000 levels (140 KB) and never finished: the answer can only come from the first levels.
      open.req.write(`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>${'<D:a>'.repeat(20_000)}`);
      const res = await open.response;
      open.req.destroy();
      expect(res.status).toBe(400);
      expect(res.text).toMatch(/nested deeper than 64/);
    });

    test('64 levels are accepted, 65 refused', async () => {
      const nest = (levels: number) => `${'<x:a>'.repeat(levels)}${'</x:a>'.repeat(levels)}`;
      // propfind and prop are the first two levels.
      expect((await propfind(PROPFIND(nest(62)))).status).toBe(207);
      const deep = await propfind(PROPFIND(nest(63)));
      expect(deep.status).toBe(400);
      expect(deep.text).toMatch(/nested deeper than 64/);
    });

    test('10,000 elements are accepted, 10,001 refused', async () => {
      expect((await propfind(PROPFIND('<x:p/>'.repeat(9_998)))).status).toBe(207);
      const many = await propfind(PROPFIND('<x:p/>'.repeat(9_999)));
      expect(many.status).toBe(400);
      expect(many.text).toMatch(/more than 10000 elements/);
    });

    test('other requests are answered while hostile bodies are being read and refused', async () => {
      const deep = dav.propfind('/dav/limits', '0', `<D:propfind xmlns:D="DAV:">${'<D:a>'.repeat(20_000)}${'</D:a>'.repeat(20_000)}</D:propfind>`);
      // The largest body of the most elements allowed, held open before its last bytes.
      const big = openRequest(stack.gateway.baseUrl, 'PROPFIND', '/dav/limits', { ...auth, depth: '0', 'content-type': 'application/xml' });
      const filler = `<!--${'-x'.repeat(400_000)}-->`;
      big.req.write(`<?xml version="1.0"?>${filler}<D:propfind xmlns:D="DAV:" xmlns:x="urn:x"><D:prop>${'<x:p x:b="2"/>'.repeat(9_990)}`);
      const plain = await Promise.all([1, 2, 3].map(() => dav.propfind('/dav/limits', '0')));
      expect(plain.map((r) => r.status)).toEqual([207, 207, 207]);
      big.req.end('</D:prop></D:propfind>');
      expect((await big.response).status).toBe(207);
      expect((await deep).status).toBe(400);
    });

    test('over 1 MiB is refused with 413', async () => {
      expect((await propfind(PROPFIND(`<x:p>${'y'.repeat(1024 * 1024)}</x:p>`))).status).toBe(413);
    });
  });

  describe('dead properties', () => {
    test('a resource holds at most 100; beyond, 507 and nothing of the request is kept', async () => {
      expect((await dav.put('/dav/limits/count.txt', 'x')).status).toBe(201);
      const props = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `<p:n${from + i}>v</p:n${from + i}>`);
      expect((await patch('/dav/limits/count.txt', props(0, 100))).text).toContain('HTTP/1.1 200 OK');
      const refused = await patch('/dav/limits/count.txt', [...props(100, 101), '<p:n0>changed</p:n0>']);
      expect(refused.status).toBe(207);
      expect(refused.text).toContain('HTTP/1.1 507 Insufficient Storage');
      const kept = await stored('/dav/limits/count.txt');
      expect(kept).toHaveLength(100);
      expect(kept.find((r: { local_name: string }) => r.local_name === 'n0').value).not.toContain('changed');
      // Replacing one and removing one to make room fits.
      expect((await patch('/dav/limits/count.txt', props(100, 101), ['<p:n1/>'])).text).toContain('HTTP/1.1 200 OK');
    });

    test('at most 64 KiB in all per resource: a value of exactly 64 KiB fits, then nothing more', async () => {
      expect((await dav.put('/dav/limits/bytes.txt', 'x')).status).toBe(201);
      expect((await patch('/dav/limits/bytes.txt', [`<p:big>${'b'.repeat(65_537)}</p:big>`])).text).toContain('HTTP/1.1 507');
      expect(await stored('/dav/limits/bytes.txt')).toEqual([]);
      expect((await patch('/dav/limits/bytes.txt', [`<p:half>${'h'.repeat(40_000)}</p:half>`])).text).toContain('HTTP/1.1 200 OK');
      const over = await patch('/dav/limits/bytes.txt', [`<p:small>s</p:small>`, `<p:other>${'o'.repeat(30_000)}</p:other>`]);
      expect(over.text).toContain('HTTP/1.1 507');
      expect((await stored('/dav/limits/bytes.txt')).map((r: { local_name: string }) => r.local_name)).toEqual(['half']);
      expect((await patch('/dav/limits/bytes.txt', [`<p:half>${'h'.repeat(65_536)}</p:half>`])).text).toContain('HTTP/1.1 200 OK');
    });

    test('concurrent PROPPATCHes together stay within the limit', async () => {
      expect((await dav.put('/dav/limits/race.txt', 'x')).status).toBe(201);
      const batch = (tag: string) => Array.from({ length: 60 }, (_, i) => `<p:${tag}${i}>v</p:${tag}${i}>`);
      const results = await Promise.all([patch('/dav/limits/race.txt', batch('a')), patch('/dav/limits/race.txt', batch('b'))]);
      expect(results.filter((r) => r.text.includes('HTTP/1.1 507'))).toHaveLength(1);
      expect(await stored('/dav/limits/race.txt')).toHaveLength(60);
    });

    test('COPY keeps them with the copy, and a purge removes them', async () => {
      expect((await dav.put('/dav/limits/src.txt', 'x')).status).toBe(201);
      expect((await patch('/dav/limits/src.txt', ['<p:a>1</p:a>', '<p:b>2</p:b>'])).text).toContain('200 OK');
      expect((await dav.request('COPY', '/dav/limits/src.txt', { headers: { destination: '/dav/limits/copy.txt' } })).status).toBe(201);
      expect((await stored('/dav/limits/copy.txt')).map((r: { local_name: string }) => r.local_name)).toEqual(['a', 'b']);
      const id = /<fs:id>([^<]*)<\/fs:id>/.exec((await dav.propfind('/dav/limits/copy.txt', '0')).text)![1];
      expect((await dav.request('DELETE', '/dav/limits/copy.txt')).status).toBe(204);
      expect((await stack.admin.delete(`/v1/trash/${id}`)).status).toBe(204);
      expect(await stack.env.db('dav_properties').where({ resource_id: id }).select('prop_key')).toEqual([]);
    });

    test('any stored value is answered as XML a strict parser reads, however deep; xml: names keep their prefix', async () => {
      expect((await dav.put('/dav/limits/deep.txt', 'x')).status).toBe(201);
      const xmlNames = patch('/dav/limits/deep.txt', ['<xml:space>keep</xml:space>', '<p:lang xml:lang="fr"><xml:inner>oui</xml:inner></p:lang>']);
      expect((await xmlNames).text).toContain('200 OK');
      // A value nested 1,400 deep, as PROPPATCH no longer takes it but a store may hold it.
      let value: object = { ns: 'urn:example', local: 'leaf', attrs: [], children: ['end'] };
      for (let i = 0; i < 1_400; i++) value = { ns: 'urn:example', local: 'n', attrs: [], children: [value] };
      const id = /<fs:id>([^<]*)<\/fs:id>/.exec((await dav.propfind('/dav/limits/deep.txt', '0')).text)![1];
      await stack.env.db('dav_properties').insert({ resource_id: id, prop_key: 'f'.repeat(64), user_id: (await stack.env.db('resources').where({ id }).first('user_id')).user_id, namespace: 'urn:example', local_name: 'n', value: JSON.stringify(value) });
      const listing = await dav.propfind('/dav/limits', '1');
      expect(listing.status).toBe(207);
      const elements = strictParse(listing.text);
      expect(elements.filter((e) => e.local === 'n')).toHaveLength(1_400);
      expect(elements).toEqual(expect.arrayContaining([{ uri: 'http://www.w3.org/XML/1998/namespace', local: 'space' }, { uri: 'http://www.w3.org/XML/1998/namespace', local: 'inner' }]));
      expect(listing.text).toContain('xml:lang="fr"');
    });
  });

  describe('locks', () => {
    const lock = (path: string, scope: 'shared' | 'exclusive', owner?: string) =>
      dav.request('LOCK', path, { headers: { timeout: 'Second-600', 'content-type': 'application/xml', depth: '0' }, body: LOCKINFO(scope, owner) });

    test('an owner over 4 KiB is refused with 507, and nothing is kept: no lock, no file', async () => {
      const refused = await lock('/dav/limits/owned.txt', 'exclusive', 'o'.repeat(4097));
      expect(refused.status).toBe(507);
      expect(refused.text).toContain('<D:error');
      expect((await dav.request('HEAD', '/dav/limits/owned.txt')).status).toBe(404);
      expect((await lock('/dav/limits/owned.txt', 'exclusive', 'o'.repeat(4096))).status).toBe(201);
    });

    test('a lock goes with its resource when the API deletes it: the path is free again', async () => {
      expect((await dav.put('/dav/limits/api-deleted.txt', 'x')).status).toBe(201);
      expect((await lock('/dav/limits/api-deleted.txt', 'exclusive')).status).toBe(200);
      expect((await dav.put('/dav/limits/api-deleted.txt', 'y')).status).toBe(423);
      const { id } = await stack.env.db('resources').where({ name: 'api-deleted.txt' }).whereNull('deleted_at').first('id');
      expect((await stack.admin.delete(`/v1/files/${id}`)).status).toBe(200);

      expect((await dav.put('/dav/limits/api-deleted.txt', 'z')).status).toBe(201);
      const discovery = await dav.propfind('/dav/limits/api-deleted.txt', '0', '<D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>');
      expect(discovery.text).not.toContain('<D:activelock>');
    });

    test('at most 100 locks per resource', async () => {
      expect((await dav.put('/dav/limits/shared.txt', 'x')).status).toBe(201);
      for (let i = 0; i < 100; i++) expect((await lock('/dav/limits/shared.txt', 'shared')).status).toBe(200);
      const refused = await lock('/dav/limits/shared.txt', 'shared');
      expect(refused.status).toBe(507);
      const discovery = await dav.propfind('/dav/limits/shared.txt', '0', '<D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>');
      expect(discovery.text.match(/<D:activelock>/g)).toHaveLength(100);
    });

    test('at most 10,000 locks per user; lookups read only the paths a request touches', async () => {
      const user = await stack.admin.createUser('dav-many-locks');
      const store = new DavLockStore(stack.env.config.redisUrl, stack.env.config.queuePrefix, createLogger('test', 'silent'));
      try {
        // The store's connection fails fast until it is up.
        for (let tries = 0; ; tries++) {
          try {
            await store.lookup(user.userId, { covering: [''] });
            break;
          } catch (err) {
            if (tries > 100) throw err;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
        for (let i = 0; i < 10_000; i += 500) {
          await Promise.all(
            Array.from({ length: 500 }, (_, j) =>
              store.grant(user.userId, { path: `/f${i + j}`, href: `/dav/f${i + j}`, depth: '0', scope: 'exclusive', owner: null, timeoutSeconds: MAX_LOCK_SECONDS }),
            ),
          );
        }
        const grant = () => store.grant(user.userId, { path: '/one-more', href: '/dav/one-more', depth: '0', scope: 'exclusive', owner: null, timeoutSeconds: 60 });
        await expect(grant()).rejects.toMatchObject({ status: 507 });
        expect(await store.lookup(user.userId, { covering: ['/f42/inside'] })).toEqual([]);
        expect((await store.lookup(user.userId, { covering: ['/f42'], rootedAt: ['/f7'] })).map((l) => l.path).sort()).toEqual(['/f42', '/f7']);
        await store.removeWithin(user.userId, '/f42');
        await expect(grant()).resolves.toMatchObject({ path: '/one-more' });
      } finally {
        store.close();
      }
    });
  });

  test('seeded fuzz: mangled bodies never get a 5xx, and the gateway keeps answering', async () => {
    let seed = 0x5eed;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const bases = [PROPFIND('<x:a/><D:getetag/>'), PATCH(['<p:v a="1">t<p:w/></p:v>'], ['<p:z/>']), LOCKINFO('shared'), `<D:propfind xmlns:D="DAV:">${'<D:a>'.repeat(70)}`];
    const methods = ['PROPFIND', 'PROPPATCH', 'LOCK', 'PROPFIND'];
    for (let i = 0; i < 60; i++) {
      const k = rand(bases.length);
      let body = bases[k]!;
      for (let m = 0; m < 3; m++) {
        const at = rand(body.length);
        const pick = rand(4);
        body = pick === 0 ? body.slice(0, at) : pick === 1 ? body.slice(0, at) + '<x:q xmlns:x="u">'.repeat(rand(80)) + body.slice(at) : pick === 2 ? body.slice(0, at) + String.fromCharCode(rand(0x3000)) + body.slice(at) : body.slice(0, at) + body.slice(at + rand(20));
      }
      const res = await dav.request(methods[k]!, `/dav/limits/fuzz${rand(3)}.txt`, { body, headers: { depth: '0', 'content-type': 'application/xml' } });
      expect({ i, status: res.status < 500 ? 'not 5xx' : res.status }).toEqual({ i, status: 'not 5xx' });
    }
    expect((await dav.propfind('/dav/limits', '1')).status).toBe(207);
  });
});
