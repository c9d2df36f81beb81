import type { Knex } from 'knex';
import { ResourceRepository } from './resource.repository';
import type { ResourceState, ResourceType } from './resource.record';
import { TraceRepository } from './trace.repository';

/** Up to this many opIds and resource ids, both reads go in one statement. */
const ONE_STATEMENT = 500;

export interface BatchLookup {
  /** The opIds of the batch this device has already had applied. */
  processed: Set<string>;
  /** What exists of every resource the batch names (any owner, deleted or not). */
  states: Map<string, ResourceState>;
}

interface LookupRow {
  id: string | null;
  user_id: string | null;
  parent_id: string | null;
  type: ResourceType | null;
  deleted_at: Date | null;
  rev: number | null;
  operation_id: string | number | null;
}

/**
 * The two reads a sync batch starts with (its processed opIds, the resources it names) in one round
 * trip: a UNION ALL of the two primary-key lookups. Larger batches, whose lists need several chunks,
 * use the repositories' own chunked reads.
 */
export class BatchLookupRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async lookup(deviceId: string, operationIds: string[], resourceIds: string[]): Promise<BatchLookup> {
    const opIds = [...new Set(operationIds)];
    if (opIds.length === 0 || resourceIds.length === 0 || opIds.length > ONE_STATEMENT || resourceIds.length > ONE_STATEMENT) {
      return {
        processed: await new TraceRepository(this.db).processed(deviceId, opIds),
        states: await new ResourceRepository(this.db).statesOf(resourceIds),
      };
    }
    const [rows] = (await this.db.raw(
      'SELECT id, user_id, parent_id, type, deleted_at, rev, NULL AS operation_id FROM resources WHERE id IN (?) ' +
        'UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, operation_id FROM operation_traces WHERE device_id = ? AND operation_id IN (?)',
      [resourceIds, deviceId, opIds],
    )) as [LookupRow[]];
    const processed = new Set<string>();
    const states = new Map<string, ResourceState>();
    for (const r of rows) {
      if (r.operation_id !== null) processed.add(String(r.operation_id));
      else if (r.id !== null) states.set(r.id, { id: r.id, userId: r.user_id!, parentId: r.parent_id, type: r.type!, deleted: r.deleted_at !== null, rev: Number(r.rev) });
    }
    return { processed, states };
  }
}
