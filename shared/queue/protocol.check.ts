import type * as Protocol from '../protocol';
import type { ErrorCode } from '../errors';
import type { AppliedOp, BatchResult, FailedOp } from '../sync/batch.result';
import type { FileView, FolderView } from '../../services/gateway/files/files.presenter';
import type { OpType } from '../sync/ops';

/**
 * Compile-time checks that what the service sends is what shared/protocol says the wire carries:
 * a change to either side that breaks the agreement breaks `npm run build`. Nothing here runs.
 */
type Assert<T extends true> = T;
type Extends<A, B> = [A] extends [B] ? true : false;

export type ProtocolChecks = [
  Assert<Extends<FileView, Protocol.File>>,
  Assert<Extends<Protocol.File, FileView>>,
  Assert<Extends<FolderView, Protocol.Folder>>,
  Assert<Extends<Protocol.Folder, FolderView>>,
  Assert<Extends<ErrorCode, Protocol.ErrorCode>>,
  Assert<Extends<AppliedOp['outcome'], Protocol.OpOutcome>>,
  Assert<Extends<Protocol.OpOutcome, AppliedOp['outcome']>>,
  Assert<Extends<FailedOp['error']['code'], Protocol.ErrorCode>>,
  Assert<Extends<keyof BatchResult, keyof Protocol.SyncOpsResponse>>,
  Assert<Extends<AppliedOp['rev'], Protocol.AppliedOp['rev']>>,
  Assert<Extends<FailedOp['rev'], Protocol.FailedOp['rev']>>,
  Assert<Extends<OpType, Protocol.OpType>>,
  Assert<Extends<Protocol.OpType, OpType>>,
];
