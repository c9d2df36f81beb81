import type { ErrorBody } from '../errors';
import { LosslessNumber, stringifyLossless } from '../json';
import type { OpOutcome, SyncOpsResponse } from '../protocol';
import type { OpEcho } from './ops';

/** What became of one op of a batch (the API's outcomes, shared/protocol). */
export type { OpOutcome };

/**
 * The resource's rev right after the op (for a duplicate, its rev now); null when the op names no
 * resource or the resource does not exist for the caller. A client that records it recognises its
 * own change when the feed brings it back.
 */
export type ResultRev = number | null;

export interface AppliedOp extends OpEcho {
  outcome: OpOutcome;
  rev: ResultRev;
}

export interface FailedOp extends OpEcho {
  error: ErrorBody;
  /** The rev as of the failure, with the same rule as AppliedOp.rev. */
  rev: ResultRev;
}

/** A batch's result, as the worker stores it in the inbox and the gateway answers it. */
export interface BatchResult {
  applied: AppliedOp[];
  failed: FailedOp | null;
}

const echoJson = (e: OpEcho) => ({
  opId: e.opId === null ? null : e.opId.kind === 'number' ? new LosslessNumber(e.opId.raw) : e.opId.raw,
  type: e.type,
  resourceId: e.resourceId,
});

/** The response body, but for each opId: a LosslessNumber when it was sent as a number. */
type Echoed<T> = T extends { opId: unknown } ? Omit<T, 'opId'> & { opId: LosslessNumber | string | null } : T;
type Rendered<T> = { [K in keyof T]: T[K] extends (infer E)[] ? Echoed<E>[] : Echoed<T[K]> };

/** The HTTP response body of a batch, with every opId echoed exactly as it was sent. */
export function renderBatchResult(result: BatchResult): string {
  const body = {
    // `?? null`: results stored before revisions were reported have none.
    applied: result.applied.map((a) => ({ ...echoJson(a), outcome: a.outcome, rev: a.rev ?? null })),
    failed: result.failed === null ? null : { ...echoJson(result.failed), rev: result.failed.rev ?? null, error: result.failed.error },
  } satisfies Rendered<SyncOpsResponse>;
  return stringifyLossless(body);
}
