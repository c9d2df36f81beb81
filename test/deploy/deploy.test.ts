import { execFile } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES } from '../../shared/config';

/**
 * No Docker engine runs where the tests do, so the deployment files are checked for what can be
 * checked without one: their structure, and that every variable they set is one the services read.
 */
const ROOT = path.join(__dirname, '..', '..');
const read = (file: string) => fs.readFile(path.join(ROOT, file), 'utf8');

type Dict = Record<string, any>;

async function compose(): Promise<Dict> {
  // The file shares settings through YAML merge keys ("<<: *filesync-env").
  return parse(await read('docker-compose.yml'), { merge: true }) as Dict;
}

async function k8sDocuments(): Promise<Dict[]> {
  const dir = path.join(ROOT, 'deploy', 'k8s');
  const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'));
  const docs: Dict[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await fs.readFile(path.join(dir, file), 'utf8'))) {
      expect(doc.errors).toEqual([]);
      docs.push(doc.toJS() as Dict);
    }
  }
  return docs;
}

const deployment = (docs: Dict[], component: string) =>
  docs.find((d) => d.kind === 'Deployment' && d.metadata.labels?.['app.kubernetes.io/component'] === component);

test('docker-compose.yml runs MySQL 8.4, Redis 7 without eviction and with AOF, a gateway and a worker from deploy/Dockerfile', async () => {
  const { services } = await compose();
  // s3 and s3-bucket belong to the "s3" profile: an S3 server for STORAGE_DRIVER=s3.
  expect(Object.keys(services).sort()).toEqual(['gateway', 'mysql', 'redis', 's3', 's3-bucket', 'worker']);
  expect(services.s3.profiles).toEqual(['s3']);
  expect(services['s3-bucket'].profiles).toEqual(['s3']);
  expect(services.mysql.image).toBe('mysql:8.4');
  expect(services.redis.image).toMatch(/^redis:7(\.|-|$)/);
  const redisCommand = [services.redis.command].flat().join(' ');
  expect(redisCommand).toContain('--maxmemory-policy noeviction');
  expect(redisCommand).toContain('--appendonly yes');
  for (const name of ['gateway', 'worker']) {
    expect(services[name].build).toEqual({ context: '.', dockerfile: 'deploy/Dockerfile' });
    expect(services[name].depends_on).toEqual({ mysql: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
  }
  expect(services.gateway.command.join(' ')).toContain('dist/services/gateway/main.js');
  expect(services.worker.command.join(' ')).toContain('dist/services/worker/main.js');
});

test('the worker can be scaled: no published port, no fixed container name, no fixed host path', async () => {
  const { services } = await compose();
  expect(services.worker.ports).toBeUndefined();
  expect(services.worker.container_name).toBeUndefined();
  // Only the named uploads volume the gateways share (the trash purge removes content files).
  expect(services.worker.volumes ?? []).toEqual(['uploads:/var/lib/filesync/uploads']);
  expect(services.gateway.ports).toEqual(['${GATEWAY_PORT:-8080}:8080']);
});

test('every service has a health check: the gateway’s /readyz, the worker’s /healthz, MySQL and Redis pings', async () => {
  const { services } = await compose();
  const check = (name: string) => [services[name].healthcheck?.test].flat().join(' ');
  expect(check('gateway')).toContain('http://127.0.0.1:8080/readyz');
  expect(check('worker')).toContain('http://127.0.0.1:9091/healthz');
  expect(check('mysql')).toContain('mysqladmin ping');
  expect(check('redis')).toContain('redis-cli');
});

test('uploads, the data directory, MySQL and Redis data are named volumes', async () => {
  const doc = await compose();
  expect(Object.keys(doc.volumes).sort()).toEqual(['data', 'mysql-data', 'redis-data', 's3-data', 'uploads']);
  expect(doc.services.gateway.volumes.sort()).toEqual(['data:/var/lib/filesync/data', 'uploads:/var/lib/filesync/uploads']);
  expect(doc.services.mysql.volumes).toEqual(['mysql-data:/var/lib/mysql']);
  expect(doc.services.redis.volumes).toEqual(['redis-data:/data']);
});

test('the gateway and the worker get only variables the services know', async () => {
  const { services } = await compose();
  for (const name of ['gateway', 'worker']) {
    const unknown = Object.keys(services[name].environment).filter((k) => !CONFIG_VARIABLES.includes(k));
    expect({ service: name, unknown }).toEqual({ service: name, unknown: [] });
  }
});

test('the Dockerfile is multi-stage on node:22, builds with npm ci and npm run build, prunes dev dependencies and runs as a non-root user', async () => {
  const lines = (await read('deploy/Dockerfile'))
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const froms = lines.filter((l) => /^FROM /i.test(l));
  expect(froms.length).toBeGreaterThanOrEqual(2);
  for (const from of froms) expect(from).toMatch(/^FROM node:22([-.][^\s]*)?( AS \w+)?$/i);
  const runs = lines.filter((l) => /^RUN /i.test(l)).join('\n');
  expect(runs).toContain('npm ci');
  expect(runs).toContain('npm run build');
  expect(runs).toMatch(/npm prune --omit=dev/);
  // No native module of the service's own: no C toolchain, nothing compiled at install.
  expect(runs).not.toMatch(/\bg\+\+|node-gyp|npm run install/);
  expect(lines.join('\n')).not.toContain('shared/native');
  // The last stage is the image that runs: it must switch to a non-root user before its command.
  const lastStage = lines.slice(lines.lastIndexOf(froms[froms.length - 1]!));
  const users = lastStage.filter((l) => /^USER /i.test(l)).map((l) => l.split(/\s+/)[1]);
  expect(users.length).toBeGreaterThan(0);
  expect(['root', '0', '0:0']).not.toContain(users[users.length - 1]);
  expect(lastStage.findIndex((l) => /^USER /i.test(l))).toBeLessThan(lastStage.findIndex((l) => /^CMD /i.test(l)));
});

test('the image listens on every interface (HOST=0.0.0.0) and sets no variable the services do not read', async () => {
  const dockerfile = (await read('deploy/Dockerfile')).replace(/\\\n/g, ' ');
  const settings = [...dockerfile.matchAll(/^ENV\s+(.+)$/gm)].flatMap((m) => [...m[1]!.matchAll(/([A-Z][A-Z0-9_]*)=(\S*)/g)].map((v) => [v[1]!, v[2]!] as const));
  expect(settings).toContainEqual(['HOST', '0.0.0.0']);
  expect(settings.map(([name]) => name).filter((name) => name !== 'NODE_ENV' && !CONFIG_VARIABLES.includes(name))).toEqual([]);
  const configMap = (await k8sDocuments()).find((d) => d.kind === 'ConfigMap')!;
  expect(configMap.data.HOST).toBe('0.0.0.0');
});

test('.env.example lists every variable of shared/config.ts and nothing else', async () => {
  const listed = (await read('.env.example'))
    .split('\n')
    .map((l) => /^#?\s*([A-Z][A-Z0-9_]*)=/.exec(l)?.[1])
    .filter((v): v is string => v !== undefined);
  expect([...new Set(listed)].sort()).toEqual([...CONFIG_VARIABLES].sort());
});

test('docs/OPERATIONS.md has a configuration row for every variable', async () => {
  const rows = (await read('docs/OPERATIONS.md'))
    .split('\n')
    .map((l) => /^\| `([A-Z][A-Z0-9_]*)` \|/.exec(l)?.[1])
    .filter((v): v is string => v !== undefined);
  expect([...new Set(rows)].sort()).toEqual([...CONFIG_VARIABLES].sort());
});

test('the Kubernetes manifests hold a gateway Deployment and Service, a worker Deployment, a ConfigMap and a Secret example', async () => {
  const docs = await k8sDocuments();
  const gateway = deployment(docs, 'gateway');
  const worker = deployment(docs, 'worker');
  expect(gateway).toBeDefined();
  expect(worker).toBeDefined();
  expect(worker!.spec.replicas).toEqual(expect.any(Number));
  const service = docs.find((d) => d.kind === 'Service');
  expect(service?.spec.selector).toEqual(gateway!.spec.selector.matchLabels);
  expect(docs.filter((d) => d.kind === 'ConfigMap')).toHaveLength(1);
  expect(docs.filter((d) => d.kind === 'Secret')).toHaveLength(1);

  const secret = docs.find((d) => d.kind === 'Secret')!;
  for (const key of ['JWT_SECRET', 'ADMIN_USERNAME', 'ADMIN_PASSWORD']) expect(Object.keys(secret.stringData)).toContain(key);
  const configMap = docs.find((d) => d.kind === 'ConfigMap')!;
  const unknown = [...Object.keys(configMap.data), ...Object.keys(secret.stringData)].filter((k) => !CONFIG_VARIABLES.includes(k));
  expect(unknown).toEqual([]);
});

test('both Deployments probe their health endpoints and run as non-root', async () => {
  const docs = await k8sDocuments();
  for (const [component, port] of [
    ['gateway', 8080],
    ['worker', 9091],
  ] as const) {
    const spec = deployment(docs, component)!.spec.template.spec;
    const container = spec.containers[0];
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.ports.map((p: { containerPort: number }) => p.containerPort)).toContain(port);
    expect(spec.securityContext.runAsNonRoot).toBe(true);
    expect(container.envFrom.map((e: Dict) => e.configMapRef?.name ?? e.secretRef?.name).sort()).toEqual(['filesync-config', 'filesync-secrets']);
  }
});

test('docker-compose accepts the file, when the binary is installed', async () => {
  const binary = ['/usr/bin/docker-compose', '/usr/local/bin/docker-compose'].find((b) => existsSync(b));
  // The structural checks above always run; this one needs the tool, which CI machines may lack.
  if (!binary) return;
  const { stdout, stderr } = await promisify(execFile)(binary, ['-f', 'docker-compose.yml', 'config', '-q'], {
    cwd: ROOT,
    // A developer's own .env must not decide the outcome.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' },
  });
  expect(stdout).toBe('');
  expect(stderr).toBe('');
});
