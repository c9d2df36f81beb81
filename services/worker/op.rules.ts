import mime from 'mime-types';
import type { ChangeClock, ChangeStamp } from '../../shared/db/owner.transaction';
import type { NewResource, ResourceState } from '../../shared/db/repositories/resource.record';
import type { ResourceRepository } from '../../shared/db/repositories/resource.repository';
import { AppError, invalid, notFound } from '../../shared/errors';
import { extensionOf } from '../../shared/names';
import type { OpOutcome, ResultRev } from '../../shared/sync/batch.result';
import type { ParsedOp } from '../../shared/sync/ops';

/*
 * What each sync op does to the caller's tree (SPEC 4.10), given what the batch knows of the resources
 * it names. The batch applier (batch.applier.ts) runs the ops in order and records their outcomes.
 */

export interface BatchContext {
  userId: string;
  resources: ResourceRepository;
  /** Feed positions: each op that changes state takes the next one. */
  clock: ChangeClock;
  /**
   * What the batch knows of every resource it names, kept current as ops apply (revs included, as
   * the writes raise them), so each op's result reports its rev without reading it back.
   */
  states: Map<string, ResourceState>;
}

export type CreateOp = Extract<ParsedOp, { type: 'create' }>;

export function createRow(op: CreateOp, userId: string, now: Date, change: ChangeStamp): NewResource {
  const c = op.create;
  const isFile = c.resourceType === 'file';
  return {
    id: op.resourceId,
    userId,
    parentId: c.parentId,
    type: c.resourceType,
    name: c.name,
    sizeBytes: c.size,
    mimeType: isFile ? (c.mimeType ?? (mime.lookup(c.name) || null)) : null,
    extension: isFile ? extensionOf(c.name) : null,
    storageKey: null,
    contentSha256: null,
    createdAt: now,
    change,
  };
}

/** The rev of the caller's resource of that id (active or deleted), null when the caller has none. */
export function revOf(ctx: BatchContext, id: string | null): ResultRev {
  const state = id === null ? undefined : ctx.states.get(id);
  return state && state.userId === ctx.userId ? state.rev : null;
}

/**
 * Refuses an op whose baseRev is not the resource's rev, when the caller has that resource (active or
 * deleted). One the caller never had is left to the op's own rule (a no-op).
 */
function checkBaseRev(ctx: BatchContext, op: ParsedOp & { baseRev?: number }): void {
  if (op.baseRev === undefined || op.resourceId === null) return;
  const state = ctx.states.get(op.resourceId);
  if (!state || state.userId !== ctx.userId || state.rev === op.baseRev) return;
  throw new AppError('PRECONDITION_FAILED', `baseRev is ${op.baseRev} but the resource is at rev ${state.rev}`, {
    details: { rev: state.rev, deleted: state.deleted },
  });
}

/** The caller's active resource of that id, or undefined (absent, deleted or another user's). */
export function ownedActive(ctx: BatchContext, id: string): ResourceState | undefined {
  const state = ctx.states.get(id);
  return state && state.userId === ctx.userId && !state.deleted ? state : undefined;
}

function requireTargetFolder(ctx: BatchContext, parentId: string | null): void {
  if (parentId === null) return;
  if (ownedActive(ctx, parentId)?.type !== 'folder') throw notFound('the parent folder does not exist');
}

export async function applyOp(op: ParsedOp, ctx: BatchContext, now: Date): Promise<OpOutcome> {
  const { resources, states, userId, clock } = ctx;
  switch (op.type) {
    case 'share':
    case 'share_link':
      return 'noop';

    case 'create': {
      const existing = states.get(op.resourceId);
      if (existing) {
        if (existing.userId !== userId) throw invalid('resourceId is already used by another resource');
        return 'noop';
      }
      requireTargetFolder(ctx, op.create.parentId);
      const row = createRow(op, userId, now, clock.next());
      await resources.insert(row);
      states.set(op.resourceId, { id: op.resourceId, userId, parentId: row.parentId, type: row.type, deleted: false, rev: 1 });
      return 'applied';
    }

    case 'update': {
      checkBaseRev(ctx, op);
      const state = ownedActive(ctx, op.resourceId);
      if (!state) return 'noop';
      await resources.rename(userId, op.resourceId, op.name, now, clock.next());
      state.rev++;
      return 'applied';
    }

    case 'move': {
      checkBaseRev(ctx, op);
      const state = ownedActive(ctx, op.resourceId);
      if (!state) return 'noop';
      requireTargetFolder(ctx, op.parentId);
      if (state.type === 'folder' && op.parentId !== null && (await resources.isSelfOrAncestor(userId, op.parentId, op.resourceId))) {
        throw invalid('a folder cannot be moved into itself or one of its descendants');
      }
      await resources.move(userId, op.resourceId, op.parentId, now, clock.next());
      state.parentId = op.parentId;
      state.rev++;
      return 'applied';
    }

    case 'delete': {
      checkBaseRev(ctx, op);
      const state = ownedActive(ctx, op.resourceId);
      if (!state) return 'noop';
      if (state.type === 'file') {
        await resources.softDeleteFile(userId, op.resourceId, now, clock.next());
        state.deleted = true;
        state.rev++;
      } else {
        // Every active resource of the subtree (the folder included) is deleted with rev + 1.
        for (const id of await resources.softDeleteTree(userId, op.resourceId, now, clock.next())) {
          const s = states.get(id);
          if (s && !s.deleted) {
            s.deleted = true;
            s.rev++;
          }
        }
      }
      return 'applied';
    }
  }
}
