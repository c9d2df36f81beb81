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

  async listFiles(userId: string, parentId: string | null, q: ListQuery): Promise<PageResult<ResourceRecord>> {
    const direction = q.descending ? 'desc' : 'asc';
    const ids = this.db('resources')
      .where({ user_id: userId, parent_key: parentId ?? '', type: 'file', alive: 1 })
      .orderBy([
        { column: q.sort, order: direction },
        { column: 'id', order: direction },
      ])
      .limit(q.limit)
      .offset(q.offset)
      .select('id');
    const [items, total] = await Promise.all([this.rows(userId, ids, [{ column: q.sort, order: direction }, { column: 'id', order: direction }]), this.counters.filesIn(userId, parentId)]);
    return { items, total };
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
    const [items, count] = await Promise.all([
      this.rows(userId, ids, [
        { column: 'name', order: 'asc' },
        { column: 'id', order: 'asc' },
      ]),
      matching().count<{ n: number | string }[]>({ n: '*' }),
    ]);
    return { items, total: Number(count[0]?.n ?? 0) };
  }

  async listFolders(userId: string, parentId: string | null): Promise<ResourceRecord[]> {
    const rows = await this.db('resources')
      .where({ user_id: userId, parent_key: parentId ?? '', type: 'folder', alive: 1 })
      .orderBy([{ column: 'name' }, { column: 'id' }])
      .select(COLUMNS);
    return (rows as ResourceRow[]).map(toRecord);
  }

  /**
   * The full rows of a page of ids: a deferred join, so the ids are picked on a covering index
   * (filter, order, offset) and only the rows of the page are read in full.
   */
  private async rows(userId: string, ids: Knex.QueryBuilder, order: Order): Promise<ResourceRecord[]> {
    const rows = await this.db('resources as r')
      .join(ids.as('page'), 'page.id', 'r.id')
      .where('r.user_id', userId)
      .orderBy(order.map((o) => ({ column: `r.${o.column}`, order: o.order })))
      .select(COLUMNS.map((c) => `r.${c}`));
    return (rows as ResourceRow[]).map(toRecord);
  }
}
