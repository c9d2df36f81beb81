import type { Knex } from 'knex';
import { CountersRepository } from '../derived/counters.repository';
import { COLUMNS, toRecord, type FileSortColumn, type ListQuery, type PageResult, type ResourceRecord, type ResourceRow } from './resource.record';
import { NAME_MATCHES, SearchIndexRepository, type SqlSource } from '../derived/search-index.repository';

/** Escapes LIKE wildcards with '!' so that '%', '_' and '\' in a search are literal characters. */
export function likeContains(text: string): string {
  return `%${text.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/**
 * Up to this offset a page is read straight from `resources` in the sort's index order; beyond it the
 * ids are picked first on the covering index and only the page's rows are read (a deferred join).
 * The straight read costs a full row per skipped entry, the deferred one a derived table per
 * request: measured even at about 60 skipped rows.
 */
const STRAIGHT_PAGE_MAX_OFFSET = 50;

const SORTABLE: ReadonlySet<FileSortColumn> = new Set(['created_at', 'updated_at', 'size_bytes']);
const ROW = COLUMNS.join(', ');
/** What a listed file shows, and no more: fewer columns to read, send and parse, 50 times a page. */
const LISTED = ['id', 'parent_id', 'name', 'size_bytes', 'mime_type', 'content_sha256', 'created_at', 'updated_at', 'rev'];
const LISTED_ROW = LISTED.join(', ');
const R_LISTED_ROW = LISTED.map((c) => `r.${c}`).join(', ');
/** Times come as the server writes DATETIME(3), 'YYYY-MM-DD hh:mm:ss.fff' in UTC: no Date to build and format again. */
const AS_READ = { dateStrings: true };

/**
 * A file as lists and searches show it: the columns of its view only, its times in ISO 8601 (UTC)
 * as `Date.prototype.toISOString` writes them.
 */
export interface ListedFile {
  id: string;
  parentId: string | null;
  name: string;
  sizeBytes: number;
  mimeType: string | null;
  contentSha256: string | null;
  createdAt: string;
  updatedAt: string;
  rev: number;
}

interface ListedRow {
  id: string;
  parent_id: string | null;
  name: string;
  size_bytes: string | number;
  mime_type: string | null;
  content_sha256: string | null;
  created_at: string;
  updated_at: string;
  rev: number;
  total_files: string | number | null;
}

/** '2026-11-22 05:00:00.123' (the session's time zone is UTC) to '2026-11-22T05:00:00.123Z'. */
const isoOf = (datetime: string) => `${datetime.slice(0, 10)}T${datetime.slice(11)}Z`;

const toListed = (row: ListedRow): ListedFile => ({
  id: row.id,
  parentId: row.parent_id,
  name: row.name,
  sizeBytes: Number(row.size_bytes),
  mimeType: row.mime_type,
  contentSha256: row.content_sha256,
  createdAt: isoOf(row.created_at),
  updatedAt: isoOf(row.updated_at),
  rev: Number(row.rev),
});
const ACTIVE_FILES_IN = `user_id = ? AND parent_key = ? AND type = 'file' AND alive = 1`;
const ACTIVE_KIND_IN = `user_id = ? AND parent_key = ? AND type = ? AND alive = 1`;

/** How GET /v1/items orders a folder's children; folders always come before files. */
export type ChildSort = 'name' | 'size' | 'updatedAt';

/** One child of a folder as GET /v1/items shows it. */
export interface ListedChild {
  type: 'file' | 'folder';
  id: string;
  name: string;
  sizeBytes: number;
  mimeType: string | null;
  createdAt: string;
  updatedAt: string;
}

interface ChildRow {
  id: string;
  type: 'file' | 'folder';
  name: string;
  size_bytes: string | number;
  mime_type: string | null;
  created_at: string;
  updated_at: string;
}

const CHILD_ROW = ['id', 'type', 'name', 'size_bytes', 'mime_type', 'created_at', 'updated_at'].map((c) => `r.${c}`).join(', ');

const toChild = (row: ChildRow): ListedChild => ({
  type: row.type,
  id: row.id,
  name: row.name,
  sizeBytes: Number(row.size_bytes),
  mimeType: row.mime_type,
  createdAt: isoOf(row.created_at),
  updatedAt: isoOf(row.updated_at),
});

/**
 * The index column each kind is ordered by. Names order by name_key, the name's UTF-8 bytes: code
 * point order, with no padding of trailing spaces. Folders have no size, so they keep name order.
 */
const CHILD_KEYS: Record<ChildSort, Record<'folder' | 'file', { column: string; followsOrder: boolean }>> = {
  name: { folder: { column: 'name_key', followsOrder: true }, file: { column: 'name_key', followsOrder: true } },
  size: { folder: { column: 'name_key', followsOrder: false }, file: { column: 'size_bytes', followsOrder: true } },
  updatedAt: { folder: { column: 'updated_at', followsOrder: true }, file: { column: 'updated_at', followsOrder: true } },
};
const FOLDER_TOTAL = '(SELECT files FROM folder_file_counts WHERE user_id = ? AND parent_key = ?) AS total_files';

/**
 * The reads of lists and searches, each one statement whose text is fixed per shape (no query
 * builder on these paths: they run on every list and search). Totals come from derived data
 * instead of counting the folder or scanning the owner's names: the per-folder counters and the
 * trigram index, both kept in the write transactions (derived.hooks.ts).
 */
export class ListingRepository {
  private readonly counters: CountersRepository;
  private readonly index: SearchIndexRepository;
  private readonly listSql = new Map<string, string>();

  constructor(private readonly db: Knex) {
    this.counters = new CountersRepository(db);
    this.index = new SearchIndexRepository(db);
  }

  /**
   * One page of a folder's files and its total, in one statement: the total is read from the
   * folder's counter as a scalar subquery, so the folder is never counted. A page past the end has
   * no row to carry the total; only then is the counter read on its own.
   */
  async listFiles(userId: string, parentId: string | null, q: ListQuery): Promise<PageResult<ListedFile>> {
    const parentKey = parentId ?? '';
    const straight = q.offset <= STRAIGHT_PAGE_MAX_OFFSET;
    const sql = this.listStatement(q.sort, q.descending, straight);
    const bindings = straight
      ? [userId, parentKey, userId, parentKey, q.limit, q.offset]
      : [userId, parentKey, userId, parentKey, q.limit, q.offset, userId];
    const [rows] = (await this.db.raw(sql, bindings).options(AS_READ)) as [ListedRow[]];
    if (rows.length === 0) return { items: [], total: await this.counters.filesIn(userId, parentId) };
    return { items: rows.map(toListed), total: Number(rows[0]!.total_files ?? 0) };
  }

  /**
   * Case-insensitive substring search on the names of active files; LOWER on both sides keeps accents
   * significant, '%', '_' and '\' are literal, by name then id, with the exact total. A term of three
   * characters or more reads one posting list of the trigram index, its rarest trigram's, verifying
   * each entry with the same LIKE on the name the entry carries; a shorter term scans the owner's names.
   * Page and total are one statement, the total a scalar subquery evaluated once.
   */
  async searchFiles(userId: string, text: string, limit: number, offset: number): Promise<PageResult<ListedFile>> {
    const pattern = likeContains(text);
    const rarest = await this.index.rarestGram(userId, text);
    if (rarest?.entries === 0) return { items: [], total: 0 };
    const matching: SqlSource = rarest
      ? SearchIndexRepository.candidates(userId, rarest.gram, pattern)
      : { from: `resources WHERE user_id = ? AND type = 'file' AND alive = 1 AND ${NAME_MATCHES}`, bindings: [userId, pattern], id: 'id' };
    const [rows] = (await this.db.raw(
      `SELECT ${R_LISTED_ROW}, (SELECT COUNT(*) FROM ${matching.from}) AS total_files
       FROM resources r
       JOIN (SELECT ${matching.id} AS id FROM ${matching.from} ORDER BY name, ${matching.id} LIMIT ? OFFSET ?) page ON page.id = r.id
       WHERE r.user_id = ? ORDER BY r.name, r.id`,
      [...matching.bindings, ...matching.bindings, limit, offset, userId],
    ).options(AS_READ)) as [ListedRow[]];
    if (rows.length > 0) return { items: rows.map(toListed), total: Number(rows[0]!.total_files) };
    const [alone] = (await this.db.raw(`SELECT COUNT(*) AS n FROM ${matching.from}`, matching.bindings)) as [Array<{ n: number | string }>];
    return { items: [], total: Number(alone[0]?.n ?? 0) };
  }

  /**
   * One page of a folder's children, folders first. The two counts come in one round trip (files from
   * the folder's counter, folders counted on the index), then each kind's part of the page is one
   * range read of an index that starts with (owner, folder, kind) and ends with the sort key and id,
   * the rows joined after the page's ids are picked: a page of a folder of 100,000 children reads
   * what a page of a small one does.
   */
  async listChildren(userId: string, parentId: string | null, sort: ChildSort, descending: boolean, limit: number, offset: number): Promise<PageResult<ListedChild>> {
    const parentKey = parentId ?? '';
    const [counts] = (await this.db.raw(
      `SELECT (SELECT COUNT(*) FROM resources WHERE ${ACTIVE_KIND_IN}) AS folders,
              (SELECT files FROM folder_file_counts WHERE user_id = ? AND parent_key = ?) AS files`,
      [userId, parentKey, 'folder', userId, parentKey],
    )) as [Array<{ folders: string | number; files: string | number | null }>];
    const folders = Number(counts[0]?.folders ?? 0);
    const total = folders + Number(counts[0]?.files ?? 0);
    const items: ListedChild[] = [];
    if (offset < folders) items.push(...(await this.childrenOf(userId, parentKey, 'folder', sort, descending, limit, offset)));
    const left = limit - items.length;
    if (left > 0 && offset + items.length < total) {
      items.push(...(await this.childrenOf(userId, parentKey, 'file', sort, descending, left, Math.max(0, offset - folders))));
    }
    return { items, total };
  }

  private async childrenOf(userId: string, parentKey: string, type: 'file' | 'folder', sort: ChildSort, descending: boolean, limit: number, offset: number): Promise<ListedChild[]> {
    const key = CHILD_KEYS[sort][type];
    const dir = key.followsOrder && descending ? 'DESC' : 'ASC';
    const [rows] = (await this.db.raw(
      `SELECT ${CHILD_ROW} FROM resources r
       JOIN (SELECT id FROM resources WHERE ${ACTIVE_KIND_IN} ORDER BY ${key.column} ${dir}, id ${dir} LIMIT ? OFFSET ?) page ON page.id = r.id
       WHERE r.user_id = ? ORDER BY r.${key.column} ${dir}, r.id ${dir}`,
      [userId, parentKey, type, limit, offset, userId],
    ).options(AS_READ)) as [ChildRow[]];
    return rows.map(toChild);
  }

  /**
   * The active folder and its ancestors, the root's child first; empty when the folder is not an
   * active folder of the owner. Walks up by primary key (at most 1000 levels, the recursion limit).
   */
  async folderPath(userId: string, folderId: string): Promise<Array<{ id: string; name: string }>> {
    const [rows] = (await this.db.raw(
      `WITH RECURSIVE up (id, parent_id, name, depth) AS (
         SELECT id, parent_id, name, 0 FROM resources WHERE id = ? AND user_id = ? AND type = 'folder' AND alive = 1
         UNION ALL
         SELECT r.id, r.parent_id, r.name, up.depth + 1 FROM resources r JOIN up ON r.id = up.parent_id
         WHERE r.user_id = ? AND r.alive = 1 AND up.depth < 999
       ) SELECT id, name FROM up ORDER BY depth DESC`,
      [folderId, userId, userId],
    )) as [Array<{ id: string; name: string }>];
    return rows.map((r) => ({ id: r.id, name: r.name }));
  }

  async listFolders(userId: string, parentId: string | null): Promise<ResourceRecord[]> {
    const [rows] = (await this.db.raw(
      `SELECT ${ROW} FROM resources WHERE user_id = ? AND parent_key = ? AND type = 'folder' AND alive = 1 ORDER BY name, id`,
      [userId, parentId ?? ''],
    )) as [ResourceRow[]];
    return rows.map(toRecord);
  }

  /**
   * The statement of a list page: straight from the sort's index while the offset is small, by a
   * deferred join beyond (the ids picked on the covering index, then only the page's rows read).
   */
  private listStatement(sort: FileSortColumn, descending: boolean, straight: boolean): string {
    if (!SORTABLE.has(sort)) throw new Error(`not a sort column: ${String(sort)}`);
    const key = `${sort} ${descending} ${straight}`;
    let sql = this.listSql.get(key);
    if (sql) return sql;
    const dir = descending ? 'DESC' : 'ASC';
    sql = straight
      ? `SELECT ${LISTED_ROW}, ${FOLDER_TOTAL} FROM resources WHERE ${ACTIVE_FILES_IN} ORDER BY ${sort} ${dir}, id ${dir} LIMIT ? OFFSET ?`
      : `SELECT ${R_LISTED_ROW}, ${FOLDER_TOTAL} FROM resources r
         JOIN (SELECT id FROM resources WHERE ${ACTIVE_FILES_IN} ORDER BY ${sort} ${dir}, id ${dir} LIMIT ? OFFSET ?) page ON page.id = r.id
         WHERE r.user_id = ? ORDER BY r.${sort} ${dir}, r.id ${dir}`;
    this.listSql.set(key, sql);
    return sql;
  }
}
