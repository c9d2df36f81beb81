import type { Knex } from 'knex';
import { CountersRepository } from './counters.repository';
import { COLUMNS, toRecord, type ListQuery, type PageResult, type ResourceRecord, type ResourceRow } from './resource.repository';
import { NAME_MATCHES, SearchIndexRepository } from './search-index.repository';

/** Escapes LIKE wildcards with '!' so that '%', '_' and '\' in a search are literal characters. */
export function likeContains(text: string): string {
  return `%${text.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

type Order = { column: string; order: 'asc' | 'desc' }[];

/**
 * The reads of lists and searches. Their totals come from derived data instead of counting the
 * folder or scanning the owner's names: the per-folder counters and the trigram index, both kept in
 * the write transactions (derived.hooks.ts).
 */
export class ListingRepository {
  private readonly counters: CountersRepository;
  private readonly index: SearchIndexRepository;

  constructor(private readonly db: Knex) {
    this.counters = new CountersRepository(db);
    this.index = new SearchIndexRepository(db);
  }

  /**
   * One page of a folder's files and its total, in one statement: the page by a deferred join and the
   * total read from the folder's counter as a scalar subquery, so the folder is never counted. A page
   * past the end has no row to carry the total; only then is the counter read on its own.
   */
  async listFiles(userId: string, parentId: string | null, q: ListQuery): Promise<PageResult<ResourceRecord>> {
    const direction = q.descending ? 'desc' : 'asc';
    const order: Order = [
      { column: q.sort, order: direction },
      { column: 'id', order: direction },
    ];
    const parentKey = parentId ?? '';
    const ids = this.db('resources')
      .where({ user_id: userId, parent_key: parentKey, type: 'file', alive: 1 })
      .orderBy(order)
      .limit(q.limit)
      .offset(q.offset)
      .select('id');
    const total = this.db('folder_file_counts').where({ user_id: userId, parent_key: parentKey }).select('files');
    const rows = (await this.page(userId, ids, order).select(total.as('total_files'))) as Array<ResourceRow & { total_files: string | number | null }>;
    if (rows.length === 0) return { items: [], total: await this.counters.filesIn(userId, parentId) };
    return { items: rows.map(toRecord), total: Number(rows[0]!.total_files ?? 0) };
  }

  /**
   * Case-insensitive substring search on the names of active files; LOWER on both sides keeps accents
   * significant, '%', '_' and '\' are literal, by name then id, with the exact total. A term of three
   * characters or more reads one posting list of the trigram index, its rarest trigram's, verifying
   * each entry with the same LIKE on the name the entry carries; a shorter term scans the owner's names.
   */
  async searchFiles(userId: string, text: string, limit: number, offset: number): Promise<PageResult<ResourceRecord>> {
    const pattern = likeContains(text);
    const rarest = await this.index.rarestGram(userId, text);
    if (rarest?.entries === 0) return { items: [], total: 0 };
    const matching = rarest
      ? () => this.index.matching(userId, rarest.gram, pattern)
      : () => this.db('resources').where({ user_id: userId, type: 'file', alive: 1 }).andWhereRaw(NAME_MATCHES, [pattern]);
    const idColumn = rarest ? 'resource_id' : 'id';
    const order: Order = [
      { column: 'name', order: 'asc' },
      { column: idColumn, order: 'asc' },
    ];
    const ids = matching().orderBy(order).limit(limit).offset(offset).select(`${idColumn} as id`);
    // The count rides along as a scalar subquery (evaluated once): one round trip for page and total.
    const count = matching().count({ n: '*' });
    const rows = (await this.page(userId, ids, [
      { column: 'name', order: 'asc' },
      { column: 'id', order: 'asc' },
    ]).select(count.as('total_files'))) as Array<ResourceRow & { total_files: string | number }>;
    if (rows.length > 0) return { items: rows.map(toRecord), total: Number(rows[0]!.total_files) };
    const alone = await matching().count<{ n: number | string }[]>({ n: '*' });
    return { items: [], total: Number(alone[0]?.n ?? 0) };
  }

  async listFolders(userId: string, parentId: string | null): Promise<ResourceRecord[]> {
    const rows = await this.db('resources')
      .where({ user_id: userId, parent_key: parentId ?? '', type: 'folder', alive: 1 })
      .orderBy([{ column: 'name' }, { column: 'id' }])
      .select(COLUMNS);
    return (rows as ResourceRow[]).map(toRecord);
  }

  /**
   * The full rows of a page of ids, as a query more columns can be added to: a deferred join, so the
   * ids are picked on a covering index (filter, order, offset) and only the page's rows are read.
   */
  private page(userId: string, ids: Knex.QueryBuilder, order: Order): Knex.QueryBuilder {
    return this.db('resources as r')
      .join(ids.as('page'), 'page.id', 'r.id')
      .where('r.user_id', userId)
      .orderBy(order.map((o) => ({ column: `r.${o.column}`, order: o.order })))
      .select(COLUMNS.map((c) => `r.${c}`));
  }
}
