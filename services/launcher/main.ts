import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ConfigError, loadConfig, type ConfigReader } from '../../shared/config';
import { settleAdminEnvironment } from './admin.prompt';

/**
 * `npm start`: runs one gateway and one worker side by side for a single machine. First the
 * configuration is checked as each service reads it, so a mistake is one line before any wait; then,
 * with `--build` (as `npm start` passes it), `npm run build` brings dist/ up to date (incremental: a
 * few seconds when no source changed). When either service exits the other is stopped and the
 * launcher exits with the first one's code; SIGTERM and SIGINT are passed on.
 *
 * This file is compiled on its own (tsconfig.launcher.json, into dist/launcher/) so that it runs
 * before the services are built.
 */
const ROOT = path.resolve(__dirname, '..', '..', '..', '..');

function checkConfiguration(): void {
  for (const reader of ['gateway', 'worker'] satisfies ConfigReader[]) {
    try {
      loadConfig(process.env, reader);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      console.error(`filesync ${reader}: ${err.message}`);
      process.exit(1);
    }
  }
}

/** `npm run build`, through the npm that runs `npm start` when there is one. */
function build(): void {
  const npm = process.env.npm_execpath;
  const args = ['run', '--silent', 'build'];
  const result = npm
    ? spawnSync(process.execPath, [npm, ...args], { cwd: ROOT, stdio: 'inherit' })
    : spawnSync('npm', args, { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error('filesync: the build failed (above); nothing was started');
    process.exit(result.status ?? 1);
  }
}

const BUILD = '--build';

async function main(): Promise<void> {
  await settleAdminEnvironment(process.env);
  checkConfiguration();
  if (process.argv.includes(BUILD)) build();
  const serviceArgs = process.argv.slice(2).filter((arg) => arg !== BUILD);
  for (const name of ['gateway', 'worker']) {
    services.push({ name, child: fork(path.join(ROOT, 'dist', 'services', name, 'main.js'), serviceArgs, { stdio: 'inherit' }) });
  }
  for (const { child } of services) watch(child);
}

const services: { name: string; child: ChildProcess }[] = [];
let exiting = false;
const stopAll = (signal: NodeJS.Signals) => {
  for (const { child } of services) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};

function watch(child: ChildProcess): void {
  child.on('exit', (code: number | null, signal: NodeJS.Signals | null) => {
    if (!exiting) {
      exiting = true;
      process.exitCode = code ?? (signal ? 1 : 0);
      stopAll('SIGTERM');
    }
    if (services.every(({ child: c }) => c.exitCode !== null || c.signalCode !== null)) process.exit();
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    exiting = true;
    if (services.length === 0) process.exit(0);
    stopAll(signal);
  });
}

void main();
