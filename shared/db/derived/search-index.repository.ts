import { crc32 } from 'node:zlib';
import type { Knex } from 'knex';
import type { Statement } from '../statement.batch';
import type { ActiveFile } from '../repositories/active-files.repository';

/** Longest IN list sent in one statement. */
const CHUNK = 1000;
/** The n of the n-grams. Terms shorter than this cannot use the index. */
export const GRAM = 3;
/** Index entries a probe reads per trigram of a term at most, to find the rarest one. */
const PROBE_LIMIT = 4000;
/** Trigrams of a term probed at most (spread over the term); any one of them is enough for correctness. */
const PROBED_GRAMS = 12;

/*
 * Everything is computed in SQL with the same expressions on both sides, so the index agrees with the
 * LIKE it stands in for whatever the server's case mapping is: LOWER under utf8mb4_bin of the name and
 * of the term, cut into trigrams with SUBSTRING (code points), hashed with CRC32.
 */
const TERM = 'LOWER(CONVERT(? USING utf8mb4) COLLATE utf8mb4_bin)';
/** The rows of `r` (resources) and `p` (search_positions) whose trigrams are indexed. */
const GRAMS_OF = `FROM resources r JOIN search_positions p ON p.n <= CHAR_LENGTH(r.name) - ${GRAM - 1}`;
const GRAM_OF_ROW = `CRC32(SUBSTRING(LOWER(r.name), p.n, ${GRAM}))`;
/** Keeps the first occurrence of a trigram repeated within a name (binary LOCATE on the lowered name). */
const FIRST_OCCURRENCE = `LOCATE(SUBSTRING(LOWER(r.name), p.n, ${GRAM}), LOWER(r.name)) = p.n`;
/** The case-insensitive, accent-sensitive LIKE of today's search, evaluated on a name column. */
export const NAME_MATCHES = `LOWER(name) LIKE ${TERM} ESCAPE '!'`;

/** A FROM ... WHERE clause with its bindings and the column that holds a file's id. */
export interface SqlSource {
  from: string;
  bindings: Array<string | number>;
  id: string;
}

const marks = (n: number) => Array.from({ length: n }, () => '?').join(',');

/** Index and the same recomputed from `resources`, for the repair command. */
export interface IndexDifference {
  userId: string;
  /** Index entries of no active file of that name. */
  stale: number;
  /** Active files with fewer entries than trigrams. */
  missing: number;
}

/**
 * Trigram index of the names of active files, per owner. Only SQL; writes come through DerivedData
 * (derived.hooks.ts), inside the owner's transaction, reads from ListingRepository.
 */
export class SearchIndexRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /**
   * Indexes the active files among `files` under their current names. `nameChars` is each name's
   * length in characters as ActiveFilesRepository read it in this transaction, or any upper bound.
   * The positions are bounded by the longest as a constant: with only the per-row bound the optimizer
   * plans the join to search_positions again for every file. Repeated trigrams are left out by
   * position; IGNORE only skips two trigrams of one name with the same CRC32.
   */
  async add(userId: string, files: Pick<ActiveFile, 'id' | 'nameChars'>[]): Promise<void> {
    for (const statement of this.adding(userId, files)) await this.db.raw(statement.sql, statement.bindings);
  }

  /** The statements of `add`, for a caller that sends them with others (statement.batch.ts). */
  adding(userId: string, files: Pick<ActiveFile, 'id' | 'nameChars'>[]): Statement[] {
    const named = files.filter((f) => f.nameChars >= GRAM);
    const statements: Statement[] = [];
    for (let i = 0; i < named.length; i += CHUNK) {
      const chunk = named.slice(i, i + CHUNK);
      const last = Math.max(...chunk.map((f) => f.nameChars)) - (GRAM - 1);
      statements.push({
        sql: `INSERT IGNORE INTO search_grams (user_id, gram, name, resource_id)
         SELECT r.user_id, CRC32(SUBSTRING(r.lowered, p.n, ${GRAM})), r.name, r.id
         FROM (SELECT id, user_id, name, LOWER(name) AS lowered, CHAR_LENGTH(name) - ${GRAM - 1} AS last
               FROM resources FORCE INDEX (PRIMARY)
               WHERE id IN (${marks(chunk.length)}) AND user_id = ? AND type = 'file' AND alive = 1) r
         JOIN search_positions p ON p.n <= ?
         WHERE p.n <= r.last AND LOCATE(SUBSTRING(r.lowered, p.n, ${GRAM}), r.lowered) = p.n`,
        bindings: [...chunk.map((f) => f.id), userId, last],
      });
    }
    return statements;
  }

  /** Removes the entries of `ids` under their current names (call before the rename or deletion). */
  async remove(userId: string, ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      await this.db.raw(
        `DELETE g ${GRAMS_OF}
         JOIN search_grams g ON g.user_id = r.user_id AND g.gram = ${GRAM_OF_ROW} AND g.name = r.name AND g.resource_id = r.id
         WHERE r.user_id = ? AND r.id IN (${marks(chunk.length)}) AND r.type = 'file'`,
        [userId, ...chunk],
      );
    }
  }

  /**
   * The trigram of `text` with the shortest posting list (counted up to PROBE_LIMIT) and that length,
   * or undefined when `text` is shorter than a trigram. A length of 0 means nothing can match.
   */
  async rarestGram(userId: string, text: string): Promise<{ gram: number; entries: number } | undefined> {
    if ([...text].length < GRAM) return undefined;
    const grams = spread([...new Set(await this.gramsOf(text))], PROBED_GRAMS);
    if (grams.length === 0) return undefined;
    const [counts] = (await this.db.raw(
      grams
        .map((_, i) => `SELECT ? AS gram, COUNT(*) AS n FROM (SELECT 1 FROM search_grams WHERE user_id = ? AND gram = ? LIMIT ${PROBE_LIMIT}) t${i}`)
        .join(' UNION ALL '),
      grams.flatMap((g) => [g, userId, g]),
    )) as [Array<{ gram: string | number; n: string | number }>];
    let best = { gram: grams[0]!, entries: Infinity };
    for (const c of counts) if (Number(c.n) < best.entries) best = { gram: Number(c.gram), entries: Number(c.n) };
    return best;
  }

  /**
   * The hashed trigrams of LOWER(text). For ASCII, lowering is A-Z to a-z on every server and CRC32
   * is the same function here, which saves a round trip; any other text is cut by the server itself.
   */
  private async gramsOf(text: string): Promise<number[]> {
    if (/^[\x00-\x7f]*$/.test(text)) {
      const lower = text.replace(/[A-Z]/g, (c) => c.toLowerCase());
      return Array.from({ length: lower.length - GRAM + 1 }, (_, i) => crc32(lower.slice(i, i + GRAM)));
    }
    const [rows] = (await this.db.raw(
      `SELECT CRC32(SUBSTRING(${TERM}, n, ${GRAM})) AS gram FROM search_positions
       WHERE n <= CHAR_LENGTH(CONVERT(? USING utf8mb4)) - ${GRAM - 1} ORDER BY n`,
      [text, text],
    )) as [Array<{ gram: string | number }>];
    return rows.map((r) => Number(r.gram));
  }

  /**
   * The entries of `gram`'s posting list whose name matches `pattern`, as the FROM and WHERE of a
   * statement (with its bindings) and the column holding the file's id: read in (name, id) order
   * straight off the primary key.
   */
  static candidates(userId: string, gram: number, pattern: string): SqlSource {
    return { from: `search_grams WHERE user_id = ? AND gram = ? AND ${NAME_MATCHES}`, bindings: [userId, gram, pattern], id: 'resource_id' };
  }

  /** Index entries and recomputed ones of one owner that differ, counted both ways. */
  async differences(userId: string): Promise<IndexDifference> {
    const [[stale], [missing]] = (await Promise.all([
      this.db.raw(
        `SELECT COUNT(*) AS n FROM search_grams g
         LEFT JOIN resources r ON r.id = g.resource_id AND r.user_id = g.user_id AND r.name = g.name AND r.type = 'file' AND r.alive = 1
         WHERE g.user_id = ? AND r.id IS NULL`,
        [userId],
      ),
      this.db.raw(
        `SELECT COUNT(*) AS n FROM (
           SELECT r.id, COUNT(DISTINCT ${GRAM_OF_ROW}) AS expected ${GRAMS_OF}
           WHERE r.user_id = ? AND r.type = 'file' AND r.alive = 1 GROUP BY r.id
         ) e LEFT JOIN (
           SELECT resource_id, COUNT(*) AS n FROM search_grams WHERE user_id = ? GROUP BY resource_id
         ) g ON g.resource_id = e.id
         WHERE COALESCE(g.n, 0) < e.expected`,
        [userId, userId],
      ),
    ])) as Array<[Array<{ n: string | number }>]>;
    return { userId, stale: Number(stale?.[0]?.n ?? 0), missing: Number(missing?.[0]?.n ?? 0) };
  }

  /**
   * Replaces one owner's index with one built from `resources` in one statement. Repeated trigrams
   * are left out by position rather than by a DISTINCT over millions of rows; IGNORE only skips the
   * rare two trigrams of one name with the same CRC32. (Sorting the rows into key order first was
   * measured slower than inserting them as they come.)
   */
  async rebuild(userId: string): Promise<void> {
    await this.db('search_grams').where({ user_id: userId }).delete();
    await this.db.raw(
      `INSERT IGNORE INTO search_grams (user_id, gram, name, resource_id)
       SELECT r.user_id, ${GRAM_OF_ROW}, r.name, r.id ${GRAMS_OF}
       WHERE r.user_id = ? AND r.type = 'file' AND r.alive = 1 AND ${FIRST_OCCURRENCE}`,
      [userId],
    );
  }
}

/** At most `max` items of `list`, evenly spread, first and last included. */
function spread<T>(list: T[], max: number): T[] {
  if (list.length <= max) return list;
  return Array.from({ length: max }, (_, i) => list[Math.round((i * (list.length - 1)) / (max - 1))]!);
}
