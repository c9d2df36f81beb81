import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { Api } from '../support/client';
import { startStack, type TestStack } from '../support/stack';

/**
 * LINK_TRANSFERS_PER_OWNER: the transfers of one owner's links served at once by a gateway. One more
 * waits for a slot (and is served when one frees), or is answered 503 with Retry-After when none
 * frees in time; the owner's own API is not behind those slots.
 */
describe('share links: the per-owner bound on public transfers', () => {
  let stack: TestStack;
  let api: Api;
  let anon: Api;
  const big = randomBytes(48 * 1024 * 1024);
  let fileId: string;
  let token: string;

  /** A link download whose body is not read: it holds its slot until `cut()`. */
  const held = (path: string) =>
    new Promise<{ status: number; cut: () => void }>((resolve, reject) => {
      const req = http.get(`${api.baseUrl}${path}`, (res) => {
        res.pause();
        resolve({ status: res.statusCode!, cut: () => req.destroy() });
      });
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    });

  beforeAll(async () => {
    stack = await startStack({ LINK_TRANSFERS_PER_OWNER: '1' });
    ({ api } = await stack.admin.createUser('crowded'));
    anon = new Api(api.baseUrl);
    const up = await api.upload({}, { name: 'big.bin', content: big });
    expect(up.status).toBe(201);
    fileId = up.body.id;
    const link = await api.post('/v1/links', { resourceId: fileId });
    expect(link.status).toBe(201);
    token = link.body.token;
  });

  afterAll(async () => {
    await stack?.close();
  });

  test('one transfer over the bound waits, then 503 with Retry-After; the owner downloads and lists meanwhile', async () => {
    const first = await held(`/v1/public/${token}/content`);
    expect(first.status).toBe(200);
    try {
      const second = anon.get(`/v1/public/${token}/content`);
      // The owner's own download and API, while the link's only slot is taken and one waits for it.
      const own = await fetch(`${api.baseUrl}/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${api.token}` } });
      expect(own.status).toBe(200);
      expect(createHash('sha256').update(Buffer.from(await own.arrayBuffer())).digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));
      expect((await api.get('/v1/links')).status).toBe(200);
      const refused = await second;
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('cache-control')).toBe('no-store');
      expect(refused.headers.get('referrer-policy')).toBe('no-referrer');
      // Metadata is not a transfer: it answers while the slot is taken.
      expect((await anon.get(`/v1/public/${token}`)).status).toBe(200);
    } finally {
      first.cut();
    }
  });

  test('a transfer that waits is served when the slot frees', async () => {
    const first = await held(`/v1/public/${token}/content`);
    expect(first.status).toBe(200);
    const waiting = fetch(`${api.baseUrl}/v1/public/${token}/content`);
    // Long enough for the request to be waiting for the slot, well inside the wait it is allowed.
    await new Promise((r) => setTimeout(r, 700));
    first.cut();
    const served = await waiting;
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(big)).toBe(true);
  });

  test('the slot is given back when a download is cut, and when it completes', async () => {
    for (let i = 0; i < 3; i++) {
      const cut = await held(`/v1/public/${token}/content`);
      expect(cut.status).toBe(200);
      cut.cut();
      await new Promise((r) => setTimeout(r, 50));
    }
    for (let i = 0; i < 2; i++) {
      const whole = await fetch(`${api.baseUrl}/v1/public/${token}/content`, { headers: { range: 'bytes=0-9' } });
      expect(whole.status).toBe(206);
      await whole.arrayBuffer();
    }
    // Each of these would wait 5 s and be refused if a slot had leaked.
    const last = await anon.get(`/v1/public/${token}/content`, { range: 'bytes=5-9' });
    expect(last.status).toBe(206);
  });
});
