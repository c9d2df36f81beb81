import mime from 'mime-types';
import type { Db } from '../../shared/db/knex';
import { ResourceRepository, type ResourceState } from '../../shared/db/resource.repository';
import { TraceRepository, type OperationTrace } from '../../shared/db/trace.repository';
import { invalid, isAppError, notFound } from '../../shared/errors';
import { parseLossless } from '../../shared/json';
import { extensionOf } from '../../shared/names';
import type { AppliedOp, FailedOp, OpOutcome, SyncJobResult } from '../../shared/queue/sync.contract';
import { parseOp, type ParsedOp } from '../../shared/sync/ops';

export interface BatchInput {
  userId: string;
  deviceId: string;
  opsJson: string;
}

/** Errors that stop a batch and are reported in `failed` (SPEC 4.10 rule 7); anything else aborts it. */
const STOPPING = new Set(['NAME_CONFLICT', 'NOT_FOUND', 'INVALID_REQUEST']);

interface BatchContext {
  userId: string;
  resources: ResourceRepository;
  /** What the batch knows of every resource it names, kept current as ops apply. */
  states: Map<string, ResourceState>;
}

/**
 * Applies one sync batch in one transaction: the owner's tree is locked, already processed opIds are
 * read once, the resources the batch names are read once, then each op costs the one statement that
 * changes state. Traces are written in the same transaction, so an op's effect and its trace commit
 * together or not at all. A stopping error ends the batch; the ops before it still commit.
 */
export class BatchApplier {
  constructor(private readonly db: Db) {}

  async apply(input: BatchInput): Promise<SyncJobResult> {
    const rawOps = parseLossless(input.opsJson);
    if (!Array.isArray(rawOps)) throw new Error('malformed job: opsJson is not an array');
    const parsed = rawOps.map(parseOp);

    return this.db.transaction(
      async (trx) => {
        const resources = new ResourceRepository(trx);
        const traces = new TraceRepository(trx);
        await resources.lockOwnerTree(input.userId);

        const valid = parsed.flatMap((p) => (p.ok ? [p.op] : []));
        const processed = await traces.processed(input.deviceId, valid.map((op) => op.opId));
        const ctx: BatchContext = { userId: input.userId, resources, states: await resources.statesOf(namedIds(valid)) };

        const applied: AppliedOp[] = [];
        const newTraces: OperationTrace[] = [];
        let failed: FailedOp | null = null;
        for (const result of parsed) {
          if (!result.ok) {
            failed = { ...result.echo, error: result.error.toBody() };
            break;
          }
          const op = result.op;
          if (processed.has(op.opId)) {
            applied.push({ ...op.echo, outcome: 'duplicate' });
            continue;
          }
          const now = new Date();
          let outcome: OpOutcome;
          try {
            outcome = await applyOp(op, ctx, now);
          } catch (err) {
            if (isAppError(err) && STOPPING.has(err.code)) {
              failed = { ...op.echo, error: err.toBody() };
              break;
            }
            throw err;
          }
          processed.add(op.opId);
          newTraces.push(traceOf(op, input, now));
          applied.push({ ...op.echo, outcome });
        }
        await traces.insertMany(newTraces);
        return { applied, failed };
      }
    );
  }
}

function namedIds(ops: ParsedOp[]): string[] {
  const ids = new Set<string>();
  for (const op of ops) {
    if (op.resourceId) ids.add(op.resourceId);
    if (op.type === 'create' && op.create.parentId) ids.add(op.create.parentId);
    if (op.type === 'move' && op.parentId) ids.add(op.parentId);
  }
  return [...ids];
}

function traceOf(op: ParsedOp, input: BatchInput, now: Date): OperationTrace {
  return {
    deviceId: input.deviceId,
    operationId: op.opId,
    userId: input.userId,
    opType: op.type,
    refType: op.refType,
    refId: op.refId,
    resourceId: op.resourceId,
    payload: op.tracePayload,
    createdAt: now,
  };
}

/** The caller's active resource of that id, or undefined (absent, deleted or another user's). */
function ownedActive(ctx: BatchContext, id: string): ResourceState | undefined {
  const state = ctx.states.get(id);
  return state && state.userId === ctx.userId && !state.deleted ? state : undefined;
}

function requireTargetFolder(ctx: BatchContext, parentId: string | null): void {
  if (parentId === null) return;
  if (ownedActive(ctx, parentId)?.type !== 'folder') throw notFound('the parent folder does not exist');
}

async function applyOp(op: ParsedOp, ctx: BatchContext, now: Date): Promise<OpOutcome> {
  const { resources, states, userId } = ctx;
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
      const c = op.create;
      requireTargetFolder(ctx, c.parentId);
      const extension = c.resourceType === 'file' ? extensionOf(c.name) : null;
      await resources.insert({
        id: op.resourceId,
        userId,
        parentId: c.parentId,
        type: c.resourceType,
        name: c.name,
        sizeBytes: c.size,
        mimeType: c.resourceType === 'file' ? (c.mimeType ?? (mime.lookup(c.name) || null)) : null,
        extension,
        storageKey: null,
        contentSha256: null,
        createdAt: now,
      });
      states.set(op.resourceId, { id: op.resourceId, userId, parentId: c.parentId, type: c.resourceType, deleted: false });
      return 'applied';
    }

    case 'update': {
      if (!ownedActive(ctx, op.resourceId)) return 'noop';
      await resources.rename(userId, op.resourceId, op.name, now);
      return 'applied';
    }

    case 'move': {
      const state = ownedActive(ctx, op.resourceId);
      if (!state) return 'noop';
      requireTargetFolder(ctx, op.parentId);
      if (state.type === 'folder' && op.parentId !== null && (await resources.isSelfOrAncestor(userId, op.parentId, op.resourceId))) {
        throw invalid('a folder cannot be moved into itself or one of its descendants');
      }
      await resources.move(userId, op.resourceId, op.parentId, now);
      state.parentId = op.parentId;
      return 'applied';
    }

    case 'delete': {
      const state = ownedActive(ctx, op.resourceId);
      if (!state) return 'noop';
      if (state.type === 'file') {
        await resources.softDeleteFile(userId, op.resourceId, now);
        state.deleted = true;
      } else {
        for (const id of await resources.softDeleteTree(userId, op.resourceId, now)) {
          const s = states.get(id);
          if (s) s.deleted = true;
        }
      }
      return 'applied';
    }
  }
}
