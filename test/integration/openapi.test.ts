import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Express } from 'express';
import { createLogger } from '../../shared/logger';
import { buildGateway } from '../../services/gateway/app';
import { openapiDocument } from '../../services/gateway/openapi/openapi.document';
import { BatchSubmitter } from '../../services/gateway/sync/batch.submitter';
import { Api } from '../support/client';
import { createTestEnv, JWT_SECRET, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/** The OpenAPI description is valid 3.1, is served, and lists exactly the routes the app serves. */
const ROOT = path.join(__dirname, '..', '..');
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let env: TestEnv;
let sync: BatchSubmitter;
let app: Express;
let gateway: RunningGateway;
let closeSecond: () => Promise<void>;

beforeAll(async () => {
  env = await createTestEnv();
  sync = new BatchSubmitter({ redis: env.config.redisUrl, prefix: env.config.queuePrefix, timeoutMs: 1000, db: env.db }, createLogger('gateway', 'silent'));
  gateway = await startGateway(env);
  const second = buildGateway({ config: env.config, jwtSecret: JWT_SECRET, db: env.db, sync, changes: gateway.changes, logger: createLogger('gateway', 'silent') });
  app = second.app;
  closeSecond = () => second.close();
});

afterAll(async () => {
  await sync?.close();
  await closeSecond?.();
  await gateway?.close();
  await env?.dropAll();
});

/** What router 2.3's listRoutes() reports: a route with its methods, or a mounted router. */
interface RouteInfo {
  path: string | RegExp;
  methods?: string[];
  router?: { listRoutes?: () => RouteInfo[] };
}

/**
 * Every "METHOD /path" the app routes, mounted routers included, in OpenAPI's path syntax. Mounted
 * apps (the bull-board dashboard, swagger-ui's static files) are not routers and are left out, as the
 * description covers the API and the operations endpoints, not those pages.
 */
function servedOperations(router: { listRoutes?: () => RouteInfo[] }, prefix = ''): string[] {
  if (!router.listRoutes) throw new Error('a mounted router without listRoutes(): is express still on router >= 2.3?');
  return router.listRoutes().flatMap((route) => {
    if (typeof route.path !== 'string') throw new Error(`a route with a RegExp path cannot be described: ${String(route.path)}`);
    const full = `${prefix}/${route.path}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
    if (route.router) return servedOperations(route.router, full);
    const openapiPath = full.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    // GET routes also answer HEAD implicitly; OpenAPI describes the GET. A HEAD of its own (tus) stays.
    const methods = route.methods ?? [];
    return methods.filter((m) => m !== 'HEAD' || !methods.includes('GET')).map((m) => `${m} ${openapiPath}`);
  });
}

function describedOperations(): string[] {
  return Object.entries(openapiDocument.paths).flatMap(([p, item]) =>
    Object.keys(item)
      .filter((k) => HTTP_METHODS.includes(k))
      .map((m) => `${m.toUpperCase()} ${p}`),
  );
}

test('the document is a valid OpenAPI 3.1 description', async () => {
  // The validator is ESM-only, which Jest's CommonJS runtime cannot load, so it runs in a child Node.
  const file = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'openapi-')), 'openapi.json');
  await fs.writeFile(file, JSON.stringify(openapiDocument));
  const script = `
    import { readFileSync } from 'node:fs';
    import { Validator } from '@seriousme/openapi-schema-validator';
    const validator = new Validator();
    const res = await validator.validate(JSON.parse(readFileSync(process.env.OPENAPI_FILE, 'utf8')));
    console.log(JSON.stringify({ valid: res.valid, version: validator.version, errors: res.errors ?? null }));
  `;
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...process.env, OPENAPI_FILE: file },
    });
    expect(JSON.parse(stdout)).toEqual({ valid: true, version: '3.1', errors: null });
  } finally {
    await fs.rm(path.dirname(file), { recursive: true, force: true });
  }
});

test('every route the app serves is described, and nothing else is', () => {
  const served = servedOperations((app as unknown as { router: { listRoutes(): RouteInfo[] } }).router).sort();
  expect(served).toContain('POST /v1/sync/ops');
  expect(served).toContain('GET /healthz');
  expect(describedOperations().sort()).toEqual(served);
});

test('every schema the contract names is in the components', () => {
  const names = Object.keys(openapiDocument.components.schemas);
  for (const name of ['File', 'Folder', 'Page', 'Error', 'SyncRequest', 'SyncResponse', 'Snapshot']) expect(names).toContain(name);
});

test('GET /v1/openapi.json serves the document and /docs shows it in a browser page', async () => {
  const anon = new Api(gateway.baseUrl);
  const doc = await anon.get('/v1/openapi.json');
  expect(doc.status).toBe(200);
  expect(doc.body).toEqual(JSON.parse(JSON.stringify(openapiDocument)));

  // The page answers at /docs itself (no redirect) and points its relative assets below /docs/.
  const bare = await fetch(`${gateway.baseUrl}/docs`, { redirect: 'manual' });
  expect(bare.status).toBe(200);
  const page = await anon.get('/docs');
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(page.text).toContain('swagger-ui');
  expect(page.text).toContain('<base href="/docs/">');
  expect((await anon.get('/docs/')).text).toBe(page.text);
  const init = await anon.get('/docs/swagger-ui-init.js');
  expect(init.status).toBe(200);
  expect(init.text).toContain('"/v1/sync/ops"');
  expect((await anon.get('/docs/swagger-ui.css')).status).toBe(200);
});
