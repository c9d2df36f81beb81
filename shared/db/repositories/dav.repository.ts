import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { COLUMNS, toRecord, type ResourceRecord, type ResourceRow } from './resource.record';

/** A dead property: its namespace, local name and the element as stored (JSON, see dav.xml.ts). */
export interface DeadProperty {
  namespace: string;
  localName: string;
  value: string;
}

export const propertyKey = (namespace: string, localName: string): string =>
  createHash('sha256').update(`${namespace} ${localName}`).digest('hex');

/**
 * The reads WebDAV needs beyond the API's (a child by name, a folder's members in pages) and its
 * dead properties. Every statement is scoped to the owner.
 */
export class DavRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /** The active child of `parentId` (null: the root) named exactly `name`, on the sibling-name key. */
  async child(userId: string, parentId: string | null, name: string): Promise<ResourceRecord | undefined> {
    const row = (await this.db('resources')
      .where({ user_id: userId, parent_key: parentId ?? '', alive: 1 })
      .andWhereRaw('name_key = CAST(? AS BINARY)', [name])
      .first(COLUMNS)) as ResourceRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  /**
   * One page of a folder's active members, folders first then files, each by name then id, after
   * `after` (the last member of the previous page); on ix_resources_list_name.
   */
  async members(
    userId: string,
    parentId: string | null,
    after: { type: 'file' | 'folder'; name: string; id: string } | null,
    limit: number,
  ): Promise<ResourceRecord[]> {
    const out: ResourceRecord[] = [];
    for (const type of ['folder', 'file'] as const) {
      if (after && after.type === 'file' && type === 'folder') continue;
      const q = this.db('resources').where({ user_id: userId, parent_key: parentId ?? '', type, alive: 1 });
      if (after && after.type === type) {
        q.andWhere((w) => w.where('name', '>', after.name).orWhere((x) => x.where('name', after.name).andWhere('id', '>', after.id)));
      }
      const rows = (await q.orderBy([{ column: 'name' }, { column: 'id' }]).limit(limit - out.length).select(COLUMNS)) as ResourceRow[];
      out.push(...rows.map(toRecord));
      if (out.length >= limit) break;
    }
    return out;
  }

  async properties(userId: string, resourceId: string): Promise<DeadProperty[]> {
    const rows = await this.db('dav_properties')
      .where({ user_id: userId, resource_id: resourceId })
      .orderBy('prop_key')
      .select<{ namespace: string; local_name: string; value: string }[]>('namespace', 'local_name', 'value');
    return rows.map((r) => ({ namespace: r.namespace, localName: r.local_name, value: r.value }));
  }

  /** The dead properties of several resources of the owner (a page of a PROPFIND Depth 1). */
  async propertiesOf(userId: string, resourceIds: string[]): Promise<Map<string, DeadProperty[]>> {
    const byId = new Map<string, DeadProperty[]>();
    if (resourceIds.length === 0) return byId;
    const rows = await this.db('dav_properties')
      .where({ user_id: userId })
      .whereIn('resource_id', resourceIds)
      .orderBy([{ column: 'resource_id' }, { column: 'prop_key' }])
      .select<{ resource_id: string; namespace: string; local_name: string; value: string }[]>('resource_id', 'namespace', 'local_name', 'value');
    for (const r of rows) {
      const list = byId.get(r.resource_id) ?? [];
      list.push({ namespace: r.namespace, localName: r.local_name, value: r.value });
      byId.set(r.resource_id, list);
    }
    return byId;
  }

  /**
   * Sets and removes properties of one resource, all in one transaction, when `admit` accepts them
   * given the properties the resource holds: the resource's row is locked first, so two patches of
   * one resource are checked one after the other. 'missing' when the owner has no such resource.
   */
  async patch(
    userId: string,
    resourceId: string,
    set: DeadProperty[],
    remove: Array<{ namespace: string; localName: string }>,
    admit: (existing: DeadProperty[]) => boolean = () => true,
  ): Promise<'ok' | 'refused' | 'missing'> {
    const run = async (trx: Knex.Transaction) => {
      const owned = await trx('resources').where({ id: resourceId, user_id: userId }).forUpdate().first('id');
      if (!owned) return 'missing' as const;
      if (!admit(await new DavRepository(trx).properties(userId, resourceId))) return 'refused' as const;
      for (const p of remove) {
        await trx('dav_properties').where({ resource_id: resourceId, user_id: userId, prop_key: propertyKey(p.namespace, p.localName) }).del();
      }
      for (const p of set) {
        await trx('dav_properties')
          .insert({
            resource_id: resourceId,
            prop_key: propertyKey(p.namespace, p.localName),
            user_id: userId,
            namespace: p.namespace,
            local_name: p.localName,
            value: p.value,
          })
          .onConflict(['resource_id', 'prop_key'])
          .merge(['value']);
      }
      return 'ok' as const;
    };
    if ((this.db as Knex.Transaction).isTransaction) return run(this.db as Knex.Transaction);
    return (this.db as Knex).transaction(run);
  }
}
