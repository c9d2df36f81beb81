import { ConfigError, loadConfig } from '../../shared/config';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { DerivedRepair } from '../../shared/db/derived/derived.repair';
import { createDb } from '../../shared/db/knex';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { UsageRepository } from '../../shared/quota/usage.repository';
import { createLogger } from '../../shared/logger';
import { RedisChangeNotifier } from '../../shared/queue/change.channel';
import { createContentStore } from '../../shared/storage/store.factory';
import { StoreMismatchError } from '../../shared/content/store.identity';
import { DEFAULT_FSCK_OPTIONS, Fsck, FsckRefusal, problemsFound, type FsckOptions } from './fsck';

const USAGE = 'usage: npm run fsck -- [--repair] [--min-age=<seconds>] [--allow-many-missing] [--claim-store]';

function parseArgs(argv: string[]): FsckOptions {
  const options = { ...DEFAULT_FSCK_OPTIONS };
  for (const arg of argv) {
    const minAge = /^--min-age=(\d+)$/.exec(arg);
    if (arg === '--repair') options.repair = true;
    else if (arg === '--allow-many-missing') options.allowManyMissing = true;
    else if (arg === '--claim-store') options.claimStore = true;
    else if (minAge) options.orphanMinAgeMs = Number(minAge[1]) * 1000;
    else throw new ConfigError(`unknown argument ${arg}\n${USAGE}`);
  }
  return options;
}

/**
 * `npm run fsck`: compares UPLOAD_DIR with the database named by the same environment as the services,
 * and every derived number (users' byte counters, folder file counts, the search index) with the rows
 * it is derived from. Exit code 0 when all agree (or, with --repair, were repaired), 1 when problems were
 * found (without --repair), 2 when the check itself could not run (an unreadable file is such a
 * failure, never "missing"), 3 when it refused: the store is not the database's, or, with --repair,
 * more than a tenth of the content is missing. A refusal changes nothing.
 */
async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const config = loadConfig();
  const db = createDb(config.databaseUrl, { max: 2 });
  const notifier = new RedisChangeNotifier(config, config.queuePrefix, createLogger('fsck', 'silent'));
  try {
    const store = createContentStore(config);
    const fsck = new Fsck(store, new ContentRepository(db), new OwnerTransactions(db, notifier), new UsageRepository(db), new DerivedRepair(db));
    const report = await fsck.run(options);
    for (const key of report.orphans) console.log(`orphan file: ${key}`);
    for (const m of report.missing) console.log(`missing content: resource ${m.id} (user ${m.userId}) expects ${m.storageKey}`);
    for (const v of report.missingVersions) console.log(`missing content: version ${v.id} (user ${v.userId}) expects ${v.storageKey}`);
    for (const d of report.usageDrift) console.log(`usage drift: user ${d.userId} ${d.kind}Bytes stored ${d.stored}, actual ${d.actual}`);
    const { derived } = report;
    for (const c of derived.counts) console.log(`count differed: user ${c.userId} folder ${c.parentKey || '(root)'}: stored ${c.stored}, actual ${c.actual}`);
    for (const i of derived.index) console.log(`search index differed: user ${i.userId}: ${i.stale} stale entries, ${i.missing} files missing entries`);
    console.log(`checked ${report.files} files under ${store.location} and ${report.resources} resources with content`);
    console.log(`found ${report.orphans.length} orphan files and ${report.missing.length} resources with missing content`);
    console.log(`found ${report.missingVersions.length} versions with missing content and ${report.usageDrift.length} usage counters that differ from the stored content`);
    const countsAndIndex = derived.counts.length + derived.index.length;
    const verb = report.repaired ? 'repaired' : 'found';
    console.log(`checked ${derived.users} users: ${countsAndIndex === 0 ? 'derived data exact' : `${verb} ${derived.counts.length} counts and ${derived.index.length} indexes that differed`}`);
    if (report.refused) {
      console.error(`filesync fsck: refused: ${report.refused}`);
      return 3;
    }
    if (report.repaired) {
      console.log(`repaired: removed ${report.repaired.orphansRemoved} orphan files; detached the missing content of ${report.repaired.contentCleared} resources (they now read as files without content, rev + 1, in the change feed); dropped ${report.repaired.versionsDropped} versions without content; recomputed the usage counters of ${report.repaired.usageRepaired} users`);
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
    if (err instanceof FsckRefusal || err instanceof StoreMismatchError) {
      console.error(`filesync fsck: refused: ${message}`);
      process.exit(3);
    }
    console.error(err instanceof ConfigError ? `filesync fsck: ${message}` : `filesync fsck: failed: ${message}`);
    process.exit(2);
  },
);
