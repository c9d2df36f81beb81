import mime from 'mime-types';
import type { ChangeClock, ChangeStamp } from '../../shared/db/owner.transaction';
import type { NewResource, ResourceState } from '../../shared/db/repositories/resource.record';
import type { ResourceRepository } from '../../shared/db/repositories/resource.repository';
import { AppError, invalid, notFound } from '../../shared/errors';
import { extensionOf } from '../../shared/names';
import type { OpOutcome, ResultRev } from '../../shared/sync/batch.result';
import type { ParsedOp } from '../../shared/sync/ops';

/*
 * What each sync op does to the caller's tree (docs/SYNC-CLIENT.md, section 4), given what the batch knows of the resources
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

/** What the rules need of a batch: whose it is and what it knows of the resources it names. */
export type OpView = Pick<BatchContext, 'userId' | 'states'>;

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
export function revOf(ctx: OpView, id: string | null): ResultRev {
  const state = id === null ? undefined : ctx.states.get(id);
  return state && state.userId === ctx.userId ? state.rev : null;
}

/**
 * Refuses an op whose baseRev is not the resource's rev, when the caller has that resource (active or
 * deleted). One the caller never had is left to the op's own rule (a no-op).
 */
function checkBaseRev(ctx: OpView, op: ParsedOp & { baseRev?: number }): void {
  if (op.baseRev === undefined || op.resourceId === null) return;
  const state = ctx.states.get(op.resourceId);
  if (!state || state.userId !== ctx.userId || state.rev === op.baseRev) return;
  throw new AppError('PRECONDITION_FAILED', `baseRev is ${op.baseRev} but the resource is at rev ${state.rev}`, {
    details: { rev: state.rev, deleted: state.deleted },
  });
}

/** The caller's active resource of that id, or undefined (absent, deleted or another user's). */
export function ownedActive(ctx: OpView, id: string): ResourceState | undefined {
  const state = ctx.states.get(id);
  return state && state.userId === ctx.userId && !state.deleted ? state : undefined;
}

function requireTargetFolder(ctx: OpView, parentId: string | null): void {
  if (parentId === null) return;
  if (ownedActive(ctx, parentId)?.type !== 'folder') throw notFound('the parent folder does not exist');
}

/** What an op does to the tree, decided from the batch's states alone; `move` may still be refused for a cycle. */
export type OpEffect =
  | { kind: 'noop' }
  | { kind: 'create'; op: CreateOp }
  | { kind: 'rename'; state: ResourceState; name: string }
  /** `checkCycle`: a folder moved under a folder, refused if that folder is itself or inside it (a read). */
  | { kind: 'move'; state: ResourceState; parentId: string | null; checkCycle: boolean }
  | { kind: 'delete'; state: ResourceState };

/** The rules of the ops, without a read or a write: throws the op's refusal, or says what it does. */
export function decideOp(op: ParsedOp, ctx: OpView): OpEffect {
  switch (op.type) {
    case 'share':
    case 'share_link':
      return { kind: 'noop' };

    case 'create': {
      const existing = ctx.states.get(op.resourceId);
      if (existing) {
        if (existing.userId !== ctx.userId) throw invalid('resourceId is already used by another resource');
        return { kind: 'noop' };
      }
      requireTargetFolder(ctx, op.create.parentId);
      return { kind: 'create', op };
    }

    case 'update': {
      checkBaseRev(ctx, op);
      const state = ownedActive(ctx, op.resourceId);
      return state ? { kind: 'rename', state, name: op.name } : { kind: 'noop' };
    }

    case 'move': {
      checkBaseRev(ctx, op);
      const state = ownedActive(ctx, op.resourceId);
      if (!state) return { kind: 'noop' };
      requireTargetFolder(ctx, op.parentId);
      return { kind: 'move', state, parentId: op.parentId, checkCycle: state.type === 'folder' && op.parentId !== null };
    }

    case 'delete': {
      checkBaseRev(ctx, op);
      const state = ownedActive(ctx, op.resourceId);
      return state ? { kind: 'delete', state } : { kind: 'noop' };
    }
  }
}

/** Applies an op: its rules (decideOp), then its writes, each change at the clock's next position. */
export async function applyOp(op: ParsedOp, ctx: BatchContext, now: Date): Promise<OpOutcome> {
  const { resources, states, userId, clock } = ctx;
  const effect = decideOp(op, ctx);
  switch (effect.kind) {
    case 'noop':
      return 'noop';

    case 'create': {
      const row = createRow(effect.op, userId, now, clock.next());
      await resources.insert(row);
      states.set(row.id, { id: row.id, userId, parentId: row.parentId, type: row.type, deleted: false, rev: 1 });
      return 'applied';
    }

    case 'rename':
      await resources.rename(userId, effect.state.id, effect.name, now, clock.next());
      effect.state.rev++;
      return 'applied';

    case 'move': {
      const { state, parentId } = effect;
      if (effect.checkCycle && parentId !== null && (await resources.isSelfOrAncestor(userId, parentId, state.id))) {
        throw invalid('a folder cannot be moved into itself or one of its descendants');
      }
      await resources.move(userId, state.id, parentId, now, clock.next());
      state.parentId = parentId;
      state.rev++;
      return 'applied';
    }

    case 'delete': {
      const { state } = effect;
      if (state.type === 'file') {
        await resources.softDeleteFile(userId, state.id, now, clock.next());
        state.deleted = true;
        state.rev++;
      } else {
        // Every active resource of the subtree (the folder included) is deleted with rev + 1.
        for (const id of await resources.softDeleteTree(userId, state.id, now, clock.next())) {
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
