import { readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AbortedError, ApiError, NetworkError } from '../sdk/errors';
import { foldsCase, GuardError, type SyncContext } from './context';
import { MAX_PASSES, syncOnce } from './engine';
import { Journal } from './journal';
import { Reporter } from './output';
import { stableInodes } from './scan';
import { ExitError, readSettings, Session } from './session';
import { status } from './status';
import { Transfers } from './transfers';

const COMMON = `Options:
  --server URL         the service's base address, without /v1 (FILESYNC_SERVER; default http://127.0.0.1:8080)
  --username NAME      the account, required on the first run (FILESYNC_USERNAME)
  --device-name NAME   the device name registered on the first run (FILESYNC_DEVICE_NAME; default the host name)
  --help               this text
  --version            the client's version
The password comes from FILESYNC_PASSWORD, or is asked for on a terminal; it is never written to disk.`;

const HELP: Record<string, string> = {
  '': `Usage: filesync <command> [options]

Commands:
  sync DIR [--once] [--force]   two-way sync of DIR with your whole tree on the service
  status DIR                    what is pending, the last sync, conflicted copies, usage

Options: --help (also after a command), --version.
Run "filesync <command> --help" for a command's options.
Exit codes: 0 in sync or stopped by a signal, 1 sync error or deletion guard, 2 usage error,
3 signing in failed, 4 server unreachable.`,
  sync: `Usage: filesync sync DIR [--once] [--force] [options]

Keeps DIR and your tree on the service identical. Without --once it keeps running: it watches DIR and
the service's change feed; SIGINT or SIGTERM stops it (exit 0).
  --once               one full reconciliation, then exit (0 when in sync)
  --force              let a pass delete more than half of the files on a side
${COMMON}`,
  status: `Usage: filesync status DIR [options]

Shows what is pending (ops, uploads, downloads), the last sync time, the conflicted copies created,
and the account's usage and quota.
${COMMON}`,
};

const OPTIONS = {
  server: { type: 'string' },
  username: { type: 'string' },
  'device-name': { type: 'string' },
  once: { type: 'boolean' },
  force: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** The version of clients/package.json, found upwards from this module (built or not). */
function version(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'filesync-client' && pkg.version) return pkg.version;
    } catch {
      /* not here */
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

function usage(message: string): never {
  throw new ExitError(2, message);
}

async function run(argv: string[], signal: AbortSignal, reporter: Reporter): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    usage(`${(err as Error).message}\n${HELP['']}`);
  }
  const { values, positionals } = parsed;
  const [command, dirArg, ...rest] = positionals;
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (values.help) {
    process.stdout.write(`${HELP[command && HELP[command] ? command : '']}\n`);
    return 0;
  }
  if (!command) usage(HELP['']!);
  if (command !== 'sync' && command !== 'status') usage(`unknown command "${command}"\n${HELP['']}`);
  if (command === 'status' && (values.once || values.force)) usage(`status takes no --once or --force\n${HELP.status}`);
  if (!dirArg) usage(`${command} needs a folder: filesync ${command} DIR`);
  if (rest.length > 0) usage(`unexpected argument "${rest[0]}"`);
  const dir = resolve(dirArg);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) usage(`${dirArg} is not a folder (it is never created)`);
  const settings = readSettings({ server: values.server, username: values.username, deviceName: values['device-name'] });

  if (command === 'status') {
    await status(dir, settings, (line) => process.stdout.write(`${line}\n`));
    return 0;
  }
  const journal = new Journal(dir);
  try {
    const session = new Session(journal, settings);
    await session.start();
    const ctx: SyncContext = {
      dir,
      journal,
      session,
      reporter,
      transfers: new Transfers(dir, session, journal, reporter, signal),
      ignored: () => false,
      force: values.force ?? false,
      signal,
      quotaExceeded: false,
      unsent: false,
      unplaceable: new Set(),
      reported: new Set(),
      pending: 0,
      caseInsensitive: await foldsCase(dir),
      stableInodes: await stableInodes(dir),
    };
    if (values.once) {
      // Exit 0 means "in sync": a folder still changing after every pass is not, and says so.
      if (!(await syncOnce(ctx)) && !signal.aborted) {
        throw new ExitError(1, `still changing after ${MAX_PASSES} passes; run again when the folder is quiet`);
      }
    } else await (await import('./watch')).syncForever(ctx);
    if (signal.aborted) return 0;
    return ctx.quotaExceeded || ctx.unsent ? 1 : 0;
  } finally {
    journal.close();
  }
}

/** The `filesync` command: exit codes as in docs/CLIENT.md. */
export function main(argv: string[]): void {
  const controller = new AbortController();
  const reporter = new Reporter();
  const stop = () => {
    if (controller.signal.aborted) return;
    controller.abort();
    // Whatever is in flight is abandoned safely (downloads land in .filesync/ first); never linger.
    setTimeout(() => process.exit(0), 4000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  run(argv, controller.signal, reporter)
    .then((code) => finish(reporter, code))
    .catch((err: unknown) => {
      if (controller.signal.aborted && (err instanceof AbortedError || err instanceof ApiError || err instanceof NetworkError || (err as Error)?.name === 'AbortError')) return finish(reporter, 0);
      if (err instanceof ExitError) {
        reporter.error(err.message);
        return finish(reporter, err.exitCode);
      }
      if (err instanceof GuardError) {
        reporter.error(err.message);
        return finish(reporter, 1);
      }
      if (err instanceof NetworkError) {
        reporter.error(err.message);
        return finish(reporter, 4);
      }
      if (err instanceof ApiError && err.status === 401) {
        reporter.error(`signing in failed: ${err.message}`);
        return finish(reporter, 3);
      }
      reporter.error(err instanceof Error ? err.message : String(err));
      return finish(reporter, 1);
    });
}

function finish(reporter: Reporter, code: number): void {
  reporter.stop();
  process.exitCode = code;
  // Open sockets (a long poll being torn down) must not hold the exit.
  setTimeout(() => process.exit(code), 200).unref();
}
