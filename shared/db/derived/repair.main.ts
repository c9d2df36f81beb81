/**
 * `npm run repair-derived [-- --check] [-- --user=<id>]`: recomputes the per-folder file counts and
 * the search index from `resources`, prints what differed, and (unless --check) replaces what was
 * wrong. Exits 0 when nothing differed or everything was repaired, 2 when --check found differences.
 */
import { ConfigError, loadConfig } from '../../config';
import { DerivedRepair } from './derived.repair';
import { createDb } from '../knex';
import { migrateToLatest } from '../migrations/migrate';

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const fix = !args.includes('--check');
  const userIds = args.filter((a) => a.startsWith('--user=')).map((a) => a.slice('--user='.length));
  for (const a of args) if (a !== '--check' && !a.startsWith('--user=')) throw new ConfigError(`unknown argument ${a}; usage: repair-derived [--check] [--user=<id>]`);
  const config = loadConfig();
  await migrateToLatest(config.databaseUrl);
  const db = createDb(config.databaseUrl, { max: 2 });
  try {
    const report = await new DerivedRepair(db).run({ fix, ...(userIds.length > 0 ? { userIds } : {}) });
    for (const c of report.counts) {
      console.log(`count differed: user ${c.userId} folder ${c.parentKey || '(root)'}: stored ${c.stored}, actual ${c.actual}`);
    }
    for (const i of report.index) {
      console.log(`search index differed: user ${i.userId}: ${i.stale} stale entries, ${i.missing} files missing entries`);
    }
    const differed = report.counts.length + report.index.length;
    const verb = fix ? 'repaired' : 'found';
    console.log(`checked ${report.users} users: ${differed === 0 ? 'derived data exact' : `${verb} ${report.counts.length} counts and ${report.index.length} indexes that differed`}`);
    return !fix && differed > 0 ? 2 : 0;
  } finally {
    await db.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    console.error(err instanceof ConfigError ? message : `repair failed: ${message}`);
    process.exit(1);
  },
);
