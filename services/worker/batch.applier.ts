import type { Knex } from 'knex';
import type { ChangeClock, OwnerTransactions } from '../../shared/db/owner.transaction';
import type { NewResource } from '../../shared/db/repositories/resource.record';
import { ResourceRepository } from '../../shared/db/repositories/resource.repository';
import { TraceRepository, type OperationTrace } from '../../shared/db/repositories/trace.repository';
import { BatchLookupRepository } from '../../shared/db/repositories/batch-lookup.repository';
import { AppError, isAppError } from '../../shared/errors';
import { isId } from '../../shared/ids';
import { parseLossless } from '../../shared/json';
import type { AppliedOp, BatchResult, FailedOp, OpOutcome } from '../../shared/sync/batch.result';
import { parseOp, type OpParseResult, type ParsedOp } from '../../shared/sync/ops';
import { applyOp, createRow, ownedActive, revOf, type BatchContext, type CreateOp } from './op.rules';

export interface BatchInput {
  userId: string;
  deviceId: string;
  opsJson: string;
}

/** Errors that stop a batch and are reported in `failed` (docs/SYNC-CLIENT.md, section 4); anything else aborts it. */
const STOPPING = new Set(['NAME_CONFLICT', 'NOT_FOUND', 'INVALID_REQUEST', 'PRECONDITION_FAILED']);

/**
 * Applies one sync batch in a transaction holding the owner's tree lock: already processed opIds are
 * read once, the resources the batch names are read once, then each op costs the one statement that
 * changes state, and runs of creates share one multi-row INSERT. (The two reads share one round
 * trip for batches up to 500 ops.) Traces are written in the same
 * transaction, so an op's effect and its trace commit together or not at all. A stopping error ends
 * the batch; the ops before it still commit.
 */
export class BatchApplier {
  constructor(private readonly owners: OwnerTransactions) {}

  /** Applies one batch in a transaction of its own (benchmarks, tools); the worker uses applyLocked. */
  async apply(input: BatchInput): Promise<BatchResult> {
    return this.owners.run(input, (trx, clock) => this.applyLocked(trx, clock, input));
  }

  /**
   * Applies one batch inside `trx`, an owner transaction (OwnerTransactions.run) that holds the owner's
   * lock and gives each op that changes state its feed position from `clock`: the ops' effects and
   * traces are written, nothing is committed.
   */
  async applyLocked(trx: Knex.Transaction, clock: ChangeClock, input: BatchInput): Promise<BatchResult> {
    const rawOps = parseLossless(input.opsJson);
    if (!Array.isArray(rawOps)) throw new Error('malformed batch: ops is not an array');
    const parsed = rawOps.map(parseOp);

    const resources = new ResourceRepository(trx);
    const traces = new TraceRepository(trx);
    const valid = parsed.flatMap((p) => (p.ok ? [p.op] : []));
    const { processed, states } = await new BatchLookupRepository(trx).lookup(input.deviceId, valid.map((op) => op.opId), namedIds(parsed));
    const ctx: BatchContext = { userId: input.userId, resources, clock, states };
    const run = new BatchRun(ctx, input, processed);
    for (const result of parsed) if (!(await run.next(result))) break;
    await run.flush();
    await traces.insertMany(run.traces);
    return { applied: run.applied, failed: run.failed };
  }
}

/** Longest run of creates sent as one INSERT. */
const MAX_GROUP = 500;

/** The ops of one batch, in order, and what became of them. */
class BatchRun {
  readonly applied: AppliedOp[] = [];
  readonly traces: OperationTrace[] = [];
  failed: FailedOp | null = null;
  /** Creates that can only succeed (new id, parent known to be an active folder), not yet written. */
  private pending: { op: CreateOp; row: NewResource }[] = [];

  constructor(
    private readonly ctx: BatchContext,
    private readonly input: BatchInput,
    private readonly processed: Set<string>,
  ) {}

  /** Takes the next op; false once the batch has stopped. */
  async next(result: OpParseResult): Promise<boolean> {
    if (result.ok && this.deferrable(result.op)) {
      this.defer(result.op);
      return this.pending.length < MAX_GROUP || this.flush();
    }
    if (!(await this.flush())) return false;
    if (!result.ok) {
      this.failed = { ...result.echo, error: result.error.toBody(), rev: revOf(this.ctx, result.echo.resourceId) };
      return false;
    }
    if (this.processed.has(result.op.opId)) {
      this.applied.push({ ...result.op.echo, outcome: 'duplicate', rev: revOf(this.ctx, result.op.resourceId) });
      return true;
    }
    return this.applyOne(result.op, new Date());
  }

  /**
   * Writes the waiting creates in one statement. A clash inside it (a sibling name, an id another
   * user took meanwhile) rolls the statement back whole; they are then applied one by one, so the
   * error lands on its own op and the creates before it still apply.
   */
  async flush(): Promise<boolean> {
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) return true;
    try {
      await this.ctx.resources.insertMany(group.map((g) => g.row));
    } catch (err) {
      if (!isStopping(err)) throw err;
      for (const { op } of group) {
        this.ctx.states.delete(op.resourceId);
        this.processed.delete(op.opId);
      }
      for (const { op, row } of group) if (!(await this.applyOne(op, row.createdAt))) return false;
      return true;
    }
    for (const { op, row } of group) this.record(op, 'applied', row.createdAt);
    return true;
  }

  private deferrable(op: ParsedOp): op is CreateOp {
    if (op.type !== 'create' || this.processed.has(op.opId) || this.ctx.states.has(op.resourceId)) return false;
    const parentId = op.create.parentId;
    return parentId === null || ownedActive(this.ctx, parentId)?.type === 'folder';
  }

  private defer(op: CreateOp): void {
    const row = createRow(op, this.ctx.userId, new Date(), this.ctx.clock.next());
    this.ctx.states.set(op.resourceId, { id: op.resourceId, userId: row.userId, parentId: row.parentId, type: row.type, deleted: false, rev: 1 });
    // Marked now so a repeat of the opId later in the batch is a duplicate; undone if the group fails.
    this.processed.add(op.opId);
    this.pending.push({ op, row });
  }

  private async applyOne(op: ParsedOp, now: Date): Promise<boolean> {
    let outcome: OpOutcome;
    try {
      outcome = await applyOp(op, this.ctx, now);
    } catch (err) {
      if (!isStopping(err)) throw err;
      this.failed = { ...op.echo, error: err.toBody(), rev: revOf(this.ctx, op.resourceId) };
      return false;
    }
    this.record(op, outcome, now);
    return true;
  }

  private record(op: ParsedOp, outcome: OpOutcome, now: Date): void {
    this.processed.add(op.opId);
    this.traces.push(traceOf(op, this.input, now));
    this.applied.push({ ...op.echo, outcome, rev: revOf(this.ctx, op.resourceId) });
  }
}

function isStopping(err: unknown): err is AppError {
  return isAppError(err) && STOPPING.has(err.code);
}

/** Every resource the batch names, a malformed op's well-formed resourceId included (its rev is reported). */
function namedIds(parsed: OpParseResult[]): string[] {
  const ids = new Set<string>();
  for (const result of parsed) {
    if (!result.ok) {
      if (isId(result.echo.resourceId)) ids.add(result.echo.resourceId);
      continue;
    }
    const op = result.op;
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
