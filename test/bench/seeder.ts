import { randomBytes } from 'node:crypto';
import { DerivedRepair } from '../../shared/db/derived/derived.repair';
import type { Db } from '../../shared/db/knex';

/** Twenty words, each in about 5% of the names; capitalised, so a lowercase search exercises case folding. */
const WORDS = ['Budget', 'Invoice', 'Holiday', 'Report', 'Contract', 'Draft', 'Photo', 'Scan', 'Notes', 'Slides',
  'Receipt', 'Backup', 'Letter', 'Summary', 'Plan', 'Agenda', 'Minutes', 'Design', 'Manual', 'Sheet'];
const EXTS = ['pdf', 'txt', 'jpg', 'docx', 'xlsx', 'png', 'md', 'zip'];
const MIMES = ['application/pdf', 'text/plain', 'image/jpeg', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'image/png', 'text/markdown', 'application/zip'];
/** The terms the reads search: COMMON_TERM is one of the words, RARE_TERM is in exactly RARE_MATCHES names of each user. */
export const COMMON_TERM = 'budget';
export const RARE_TERM = 'zebra';
export const RARE_MATCHES = 10;

/** Rows generated per statement: big enough that statement overhead vanishes, small enough for the undo log. */
const STEP = 100_000;

const quote = (list: string[]) => list.map((w) => `'${w}'`).join(',');

/**
 * Bulk seeding straight in SQL: INSERT ... SELECT over a numbers table, no row crosses the network.
 * Ids carry a per-user prefix and then the row number, so the primary key grows in order (appends,
 * not random page splits); names, sizes and times are spread by CRC32 of the row number, so every
 * sort and the search have real work to do. The derived data (counts, search index) is built once
 * at the end in bulk, as the repair command does, instead of row by row.
 */
export class Seeder {
  private numbers?: Promise<void>;

  constructor(
    private readonly db: Db,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  /**
   * Seeds every user of `plan` (see seedRows) with the secondary indexes of `resources` dropped and
   * built again afterwards in one ALTER: a sort per index instead of a random B-tree insert per row
   * and index, which is what made a million rows take many minutes with a small buffer pool. Then
   * each user's derived data, in bulk. Returns the rows inserted.
   */
  async seedUsers(plan: Array<{ userId: string; files: number; tag?: string }>): Promise<number> {
    await (this.numbers ??= this.createNumbers());
    const indexes = await this.droppableIndexes();
    if (indexes.length > 0) await this.db.raw(`ALTER TABLE resources ${indexes.map((i) => `DROP INDEX ${i.name}`).join(', ')}`);
    let rows = 0;
    let t = Date.now();
    const lap = (what: string) => {
      this.log(`seeding: ${what} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
      t = Date.now();
    };
    try {
      for (const p of plan) rows += await this.seedRows(p.userId, p.files, p.tag ?? '');
      lap(`${rows} resource rows inserted`);
    } finally {
      if (indexes.length > 0) await this.db.raw(`ALTER TABLE resources ${indexes.map((i) => `ADD INDEX ${i.name} (${i.columns})`).join(', ')}`);
    }
    lap(`${indexes.length} secondary indexes rebuilt`);
    for (const p of plan) await new DerivedRepair(this.db).rebuild(p.userId);
    lap('counts and search index built');
    return rows;
  }

  /**
   * `files` active files at the root of `userId`, 5% more soft-deleted ones, one folder per hundred
   * files, times spread over the last year.
   */
  private async seedRows(userId: string, files: number, tag: string): Promise<number> {
    const prefix = randomBytes(4).toString('hex');
    const deleted = Math.round(files * 0.05);
    const total = files + deleted;
    for (let from = 0; from < total; from += STEP) {
      await this.db.raw(
        `INSERT INTO resources (id, user_id, parent_id, type, name, size_bytes, mime_type, extension, created_at, updated_at, deleted_at)
         SELECT CONCAT(?, LPAD(LOWER(HEX(k)), 24, '0')), ?, NULL, 'file',
           CONCAT(IF(k < ${RARE_MATCHES}, 'Quarterly-Zebra', ELT(1 + CRC32(CONCAT('w', ?, k)) % ${WORDS.length}, ${quote(WORDS)})),
                  '-', ?, LPAD(k, 7, '0'), '.', ELT(1 + k % ${EXTS.length}, ${quote(EXTS)})),
           CRC32(CONCAT('s', ?, k)) % 50000000, ELT(1 + k % ${EXTS.length}, ${quote(MIMES)}), ELT(1 + k % ${EXTS.length}, ${quote(EXTS)}),
           created, updated, IF(k >= ?, updated, NULL)
         FROM (
           SELECT k, created, LEAST(base, created + INTERVAL CRC32(CONCAT('u', ?, k)) % 2592000 SECOND) AS updated FROM (
             SELECT k, base, base - INTERVAL CRC32(CONCAT('c', ?, k)) % 31536000 SECOND - INTERVAL k % 1000 * 1000 MICROSECOND AS created
             FROM (SELECT a.n * 1000 + b.n AS k, UTC_TIMESTAMP(3) - INTERVAL 1 HOUR AS base FROM bench_numbers a CROSS JOIN bench_numbers b
                   WHERE a.n BETWEEN ? AND ?) s0
             WHERE k < ?
           ) s1
         ) s2`,
        [prefix, userId, prefix, tag, prefix, files, prefix, prefix, from / 1000, (from + STEP) / 1000 - 1, total],
      );
    }
    const folders = Math.ceil(files / 100);
    await this.db.raw(
      `INSERT INTO resources (id, user_id, parent_id, type, name, size_bytes, created_at, updated_at)
       SELECT CONCAT(?, 'f', LPAD(LOWER(HEX(k)), 23, '0')), ?, NULL, 'folder', CONCAT('Folder-', ?, LPAD(k, 5, '0')), 0,
         UTC_TIMESTAMP(3) - INTERVAL CRC32(CONCAT('c', ?, k)) % 31536000 SECOND, UTC_TIMESTAMP(3) - INTERVAL 1 HOUR
       FROM (SELECT a.n * 1000 + b.n AS k FROM bench_numbers a CROSS JOIN bench_numbers b) s WHERE k < ?`,
      [prefix, userId, tag, prefix, folders],
    );
    return total + folders;
  }

  /** The non-unique secondary indexes of `resources` but the one the parent foreign key needs, with their columns. */
  private async droppableIndexes(): Promise<Array<{ name: string; columns: string }>> {
    const [rows] = (await this.db.raw(
      `SELECT index_name AS name, column_name AS col, collation AS c FROM information_schema.statistics
       WHERE table_schema = DATABASE() AND table_name = 'resources' AND non_unique = 1 AND index_name <> 'ix_resources_parent'
       ORDER BY index_name, seq_in_index`,
    )) as [Array<{ name: string; col: string; c: string | null }>];
    const byName = new Map<string, string[]>();
    for (const r of rows) byName.set(r.name, [...(byName.get(r.name) ?? []), `${r.col}${r.c === 'D' ? ' DESC' : ''}`]);
    return [...byName].map(([name, columns]) => ({ name, columns: columns.join(', ') }));
  }

  /** bench_numbers: 0..999, crossed with itself for up to a million rows per statement. */
  private async createNumbers(): Promise<void> {
    await this.db.raw('CREATE TABLE IF NOT EXISTS bench_numbers (n INT NOT NULL PRIMARY KEY) ENGINE=InnoDB');
    await this.db.raw('INSERT IGNORE INTO bench_numbers (n) VALUES ' + Array.from({ length: 1000 }, (_, i) => `(${i})`).join(','));
  }
}
