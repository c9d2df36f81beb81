import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { MAINTENANCE_QUEUE } from '../../shared/queue/maintenance.contract';
import { SYNC_QUEUE_NAME } from '../../shared/queue/ring.contract';
import { THUMBNAIL_QUEUE } from '../../shared/queue/thumbnail.contract';
import { CHUNK_LIST_QUEUE } from '../../shared/queue/chunk-list.contract';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/** The BullMQ dashboard at /admin/queues: a real browser for the admin, refusals for everyone else. */
const CHROMIUM = '/usr/bin/chromium';
const VIEWER = { username: 'viewer', password: 'viewer-password-1' };

let env: TestEnv;
let gateway: RunningGateway;
let admin: Api;
let viewer: Api;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  env = await createTestEnv();
  gateway = await startGateway(env);
  admin = (await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password)).api;
  viewer = (await admin.createUser(VIEWER.username, VIEWER.password)).api;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await env?.dropAll();
});

const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

function expectErrorShape(res: { status: number; body: any; headers: Headers }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body).toEqual({ error: { code, message: expect.any(String) } });
}

test('an admin opening /admin/queues in a browser with Basic credentials sees every sync queue', async () => {
  const context = await browser.newContext({ httpCredentials: ADMIN });
  const requested: string[] = [];
  // Nothing may leave this host (fonts included): on a closed network it would only stall the page.
  await context.route('**/*', (route) => {
    requested.push(route.request().url());
    return new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort();
  });
  try {
    const page = await context.newPage();
    const response = await page.goto(`${gateway.baseUrl}/admin/queues`);
    expect(response?.status()).toBe(200);
    for (const name of [SYNC_QUEUE_NAME]) {
      await page.getByText(name, { exact: true }).first().waitFor({ timeout: 15000 });
    }
    await page.waitForLoadState('networkidle');
    expect(requested.length).toBeGreaterThan(1);
    expect(requested.filter((url) => new URL(url).hostname !== '127.0.0.1')).toEqual([]);
  } finally {
    await context.close();
  }
});

test('a browser without credentials gets 401 with a Basic challenge, and the page is not shown', async () => {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const url = `${gateway.baseUrl}/admin/queues`;
    // With nothing to answer the challenge, Chromium ends the navigation with ERR_INVALID_AUTH_CREDENTIALS.
    const [response, navigation] = await Promise.all([
      page.waitForResponse(url),
      page.goto(url).then(
        () => 'shown',
        (err: Error) => err.message,
      ),
    ]);
    expect(response.status()).toBe(401);
    expect(response.headers()['www-authenticate']).toBe('Basic realm="filesync", charset="UTF-8"');
    expect(navigation).toMatch(/ERR_INVALID_AUTH_CREDENTIALS/);
    expect(await page.getByText(SYNC_QUEUE_NAME, { exact: true }).count()).toBe(0);
  } finally {
    await context.close();
  }
  expectErrorShape(await new Api(gateway.baseUrl).get('/admin/queues'), 401, 'UNAUTHORIZED');
});

test('a browser with a non-admin user’s Basic credentials is refused with 403', async () => {
  const context = await browser.newContext({ httpCredentials: VIEWER });
  try {
    const page = await context.newPage();
    const response = await page.goto(`${gateway.baseUrl}/admin/queues`);
    expect(response?.status()).toBe(403);
    expect(await response?.json()).toEqual({ error: { code: 'FORBIDDEN', message: expect.any(String) } });
  } finally {
    await context.close();
  }
});

test('an admin’s Bearer token opens the dashboard and its queue API lists the sync queue', async () => {
  const page = await admin.get('/admin/queues');
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  const api = await admin.get('/admin/queues/api/queues');
  expect(api.status).toBe(200);
  expect(api.body.queues.map((q: { name: string }) => q.name).sort()).toEqual([SYNC_QUEUE_NAME, MAINTENANCE_QUEUE, THUMBNAIL_QUEUE, CHUNK_LIST_QUEUE].sort());
});

test('the page names no outside host and carries a same-origin Content-Security-Policy', async () => {
  const page = await admin.get('/admin/queues');
  expect(page.text).not.toMatch(/(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i);
  expect(page.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
});

test('the dashboard accepts the Bearer scheme in any case (RFC 9110)', async () => {
  const { token } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
  const res = await new Api(gateway.baseUrl).get('/admin/queues/api/queues', { authorization: `bearer ${token}` });
  expect(res.status).toBe(200);
});

test('a non-admin’s Bearer token gets 403 on the dashboard and on its API', async () => {
  expectErrorShape(await viewer.get('/admin/queues'), 403, 'FORBIDDEN');
  expectErrorShape(await viewer.get('/admin/queues/api/queues'), 403, 'FORBIDDEN');
});

test('a wrong password, an unknown user or a bad token get 401 with a Basic challenge', async () => {
  const anon = new Api(gateway.baseUrl);
  for (const authorization of [basic(ADMIN.username, 'wrong-password'), basic('nobody', 'whatever-password'), 'Bearer not.a.token', 'Digest x']) {
    const res = await anon.get('/admin/queues/api/queues', { authorization });
    expectErrorShape(res, 401, 'UNAUTHORIZED');
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="filesync"/);
  }
});
