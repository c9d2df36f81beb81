/**
 * The wire types of the HTTP API (the OpenAPI description, services/gateway/openapi/): what a request and a response
 * carry, shared by the service and the SDK in clients/. This folder imports nothing, so the SDK can
 * be compiled and packed without any server package. The service builds its responses as these
 * types (no copy of them of its own), so a change here breaks the build of both sides.
 */

/** The API's error codes and their HTTP status. */
export const ERROR_CODES = {
  INVALID_REQUEST: 400,
  UNAUTHORIZED: 401,
  /** A share link with a password, asked without the access string its unlock gives. */
  PASSWORD_REQUIRED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  NAME_CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  FILE_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  SERVICE_UNAVAILABLE: 503,
  QUOTA_EXCEEDED: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

/** Every error response: `{"error": {...}}`. */
export interface ErrorResponse {
  error: ErrorBody;
}

/** `details` of a 412 on content (PUT with If-Match, tus with If-Match). */
export interface ContentPreconditionDetails {
  rev: number;
  sha256: string | null;
}

/** `details` of a sync op refused for its `baseRev`. */
export interface OpPreconditionDetails {
  rev: number;
  deleted: boolean;
}

/** `details` of a 507. */
export interface QuotaExceededDetails {
  quotaBytes: number;
  usedBytes: number;
  neededBytes: number;
}

export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
}

export interface File {
  id: string;
  name: string;
  size: number;
  mimeType: string;
  /** `""` at the root. */
  folderId: string;
  createdAt: string;
  updatedAt: string;
  rev: number;
  /** Absent while the file has no content. */
  sha256?: string;
}

export interface Folder {
  id: string;
  name: string;
  /** `""` at the root. */
  parentId: string;
  createdAt: string;
  updatedAt: string;
  rev: number;
}

export interface Device {
  id: string;
  name: string;
  platform: string | null;
  createdAt: string;
}

export interface RegisterDeviceRequest {
  name: string;
  platform?: string;
}

export interface LoginRequest {
  username: string;
  password: string;
  deviceId: string;
}

export interface LoginResponse {
  token: string;
  tokenType: 'Bearer';
  expiresAt: string;
  user: { id: string; username: string };
  deviceId: string;
}

export interface UserRef {
  id: string;
  username: string;
}

export interface User {
  id: string;
  username: string;
  email: string | null;
  isAdmin: boolean;
  createdAt: string;
  quotaBytes?: number | null;
}

export interface CreateUserRequest {
  username: string;
  password: string;
  email?: string;
  isAdmin?: boolean;
}

/** `GET /users/me/usage` (version 1.3). */
export interface Usage {
  quotaBytes: number | null;
  usedBytes: number;
  filesBytes: number;
  trashBytes: number;
  versionsBytes: number;
  uploadsBytes: number;
}

/** A kept content of a file (version 1.3). */
export interface Version {
  id: string;
  size: number;
  sha256: string;
  mimeType: string;
  createdAt: string;
  replacedAt: string;
  /** `""` when unknown. */
  deviceId: string;
}

export type TrashItem = (File & { type: 'file'; deletedAt: string }) | (Folder & { type: 'folder'; deletedAt: string });

export type ListSort = 'name' | 'size' | 'createdAt' | 'updatedAt';

// ---- Sync operations ----------------------------------------------------------------------------

export const OP_TYPES = ['create', 'update', 'move', 'delete', 'share', 'share_link'] as const;
export type OpType = (typeof OP_TYPES)[number];

/** A 64-bit operation id: sent as a decimal string so that no digit is lost. */
export type OpId = string;

export interface CreatePayload {
  resourceType: 'file' | 'folder';
  name: string;
  parentId?: string | null;
  size?: number;
  mimeType?: string;
}

interface OpCommon {
  opId: OpId;
  refType?: string;
  refId?: string;
}

export type SyncOp =
  | (OpCommon & { type: 'create'; resourceId: string; payload: CreatePayload })
  | (OpCommon & { type: 'update'; resourceId: string; baseRev?: number; payload: { name: string } })
  | (OpCommon & { type: 'move'; resourceId: string; baseRev?: number; payload: { parentId: string | null } })
  | (OpCommon & { type: 'delete'; resourceId: string; baseRev?: number; payload?: Record<string, unknown> })
  | (OpCommon & { type: 'share' | 'share_link'; resourceId?: string; payload?: Record<string, unknown> });

export interface SyncOpsRequest {
  ops: SyncOp[];
}

export type OpOutcome = 'applied' | 'noop' | 'duplicate';

export interface AppliedOp {
  opId: OpId | number | null;
  type: string | null;
  resourceId: string | null;
  outcome: OpOutcome;
  /** The resource's rev right after the op (version 1.2); null when it names no existing resource. */
  rev: number | null;
}

export interface FailedOp {
  opId: OpId | number | null;
  type: string | null;
  resourceId: string | null;
  error: ErrorBody;
  rev: number | null;
}

export interface SyncOpsResponse {
  applied: AppliedOp[];
  failed: FailedOp | null;
}

// ---- Change feed --------------------------------------------------------------------------------

export interface Change {
  id: string;
  type: 'file' | 'folder';
  name: string;
  /** `""` at the root. */
  parentId: string;
  deleted: boolean;
  rev: number;
  updatedAt: string;
  /** The device whose request made the latest change, `""` when none (version 1.2). */
  deviceId: string;
  size?: number;
  mimeType?: string;
  sha256?: string;
}

export interface ChangesPage {
  items: Change[];
  cursor: string;
  hasMore: boolean;
}

// ---- Permission snapshot ------------------------------------------------------------------------

export interface SnapshotItem {
  id: string;
  type: 'file' | 'folder';
  name: string;
  parentId: string | null;
  updatedAt: number;
  effectiveAccess: 'owner';
}

export interface PermissionSnapshot {
  items: SnapshotItem[];
  cachedAt: number;
  truncated: boolean;
}

// ---- Names --------------------------------------------------------------------------------------

/** The name rules (docs/SYNC-CLIENT.md, section 8): null when the service accepts the name, else why not. */
export function nameProblem(name: string): string | null {
  if (/\p{Cs}/u.test(name)) return 'is not valid Unicode text';
  const n = name.normalize('NFC');
  const length = [...n].length;
  if (length < 1 || length > 255) return 'must be 1 to 255 characters';
  if (n === '.' || n === '..') return "must not be '.' or '..'";
  if (n.includes('/')) return "must not contain '/'";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/.test(n)) return 'must not contain control characters';
  return null;
}
export * from './links';
