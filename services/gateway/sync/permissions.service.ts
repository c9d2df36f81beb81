import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import type { SnapshotEntry } from '../../../shared/db/repositories/resource.record';

export const SNAPSHOT_LIMIT = 10000;

/** The snapshot response; `rows` may hold one entry more than the limit, which marks it truncated. */
export function snapshotBody(rows: SnapshotEntry[], cachedAt: number) {
  return {
    items: rows.slice(0, SNAPSHOT_LIMIT).map((r) => ({
      id: r.id,
      type: r.type,
      name: r.name,
      parentId: r.parentId ?? '',
      updatedAt: r.updatedAt.getTime(),
      rev: r.rev,
      effectiveAccess: 'owner' as const,
    })),
    cachedAt,
    truncated: rows.length > SNAPSHOT_LIMIT,
  };
}

/** GET /sync/permissions: what a user may access, changed since a time; every user owns their tree alone. */
export class PermissionsService {
  constructor(private readonly resources: ResourceRepository) {}

  /** The resources of `userId` changed after `afterMs` (epoch milliseconds), at most SNAPSHOT_LIMIT. */
  async snapshot(userId: string, afterMs: number): Promise<ReturnType<typeof snapshotBody>> {
    const cachedAt = Date.now();
    return snapshotBody(await this.resources.changedSince(userId, afterMs, SNAPSHOT_LIMIT + 1), cachedAt);
  }
}
