import { ConfigError, loadConfig } from '../../shared/config';
import { ContentRepository } from '../../shared/db/content.repository';
import { createDb } from '../../shared/db/knex';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { createLogger } from '../../shared/logger';
import { RedisChangeNotifier } from '../../shared/queue/change.channel';
import { DEFAULT_FSCK_OPTIONS, Fsck, problemsFound, type FsckOptions } from './fsck';

const USAGE = 'usage: npm run fsck -- [--repair] [--min-age=<seconds>]';

function parseArgs(argv: string[]): FsckOptions {
  const options = { ...DEFAULT_FSCK_OPTIONS };
  for (const arg of argv) {
    const minAge = /^--min-age=(\d+)$/.exec(arg);
    if (arg === '--repair') options.repair = true;
    else if (minAge) options.orphanMinAgeMs = Number(minAge[1]) * 1000;
    else throw new ConfigError(`unknown argument ${arg}\n${USAGE}`);
  }
  return options;
}

/**
 * `npm run fsck`: compares UPLOAD_DIR with the database named by the same environment as the services.
 * Exit code 0 when the store is consistent (or, with --repair, was repaired), 1 when problems were
 * found (without --repair), 2 when the check itself could not run.
 */
async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const config = loadConfig();
  const db = createDb(config.databaseUrl, { max: 2 });
  const notifier = new RedisChangeNotifier(config, config.queuePrefix, createLogger('fsck', 'silent'));
  try {
    const fsck = new Fsck(config.uploadDir, new ContentRepository(db), new OwnerTransactions(db, notifier));
    const report = await fsck.run(options);
    for (const key of report.orphans) console.log(`orphan file: ${key}`);
    for (const m of report.missing) console.log(`missing content: resource ${m.id} (user ${m.userId}) expects ${m.storageKey}`);
    console.log(`checked ${report.files} files under ${config.uploadDir} and ${report.resources} resources with content`);
    console.log(`found ${report.orphans.length} orphan files and ${report.missing.length} resources with missing content`);
    if (report.repaired) {
      console.log(`repaired: removed ${report.repaired.orphansRemoved} orphan files; detached the missing content of ${report.repaired.contentCleared} resources (they now read as files without content, rev + 1, in the change feed)`);
      return 0;
    }
    return problemsFound(report) ? 1 : 0;
  } finally {
    notifier.close();
    await db.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    console.error(err instanceof ConfigError ? `filesync fsck: ${message}` : `filesync fsck: failed: ${message}`);
    process.exit(2);
  },
);
