import { invalid } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import { normalizeName } from '../../../shared/names';
import type { Principal } from '../auth/principal.service';

type Metadata = Record<string, string | null> | undefined;

/** What a client may say in Upload-Metadata, checked: the same rules as POST /files and PUT content. */
interface UploadRequestBase {
  folderId: string | null;
  /** The new resource's id, when the client chose it. */
  id?: string;
  /** Lowercase hex SHA-256 the received bytes must have. */
  sha256?: string;
  /** `filetype` (tus-js-client) or `type` (Uppy): the declared media type, as a part's Content-Type. */
  declaredType?: string;
}

/**
 * A new file (with its name), or new content for `fileId`, whose name is left out (and ignored when
 * sent: tus never renames).
 */
export type UploadRequest = UploadRequestBase & ({ fileId?: undefined; name: string } | { fileId: string; name?: undefined });

/**
 * Keys the gateway adds to an upload's stored metadata. They are set from the authenticated caller
 * when the upload is created and never taken from the client: keys under this prefix that a client
 * sends are dropped.
 */
const SERVER_PREFIX = 'filesync-';
const KEYS = {
  userId: `${SERVER_PREFIX}user`,
  deviceId: `${SERVER_PREFIX}device`,
  ifMatch: `${SERVER_PREFIX}if-match`,
  ifNoneMatch: `${SERVER_PREFIX}if-none-match`,
  declaredType: `${SERVER_PREFIX}type`,
} as const;

/**
 * The keys of Upload-Metadata the OpenAPI description names. They alone are stored from a client's metadata and
 * echoed back on HEAD; any other key (Uppy's `relativePath`, ...) is accepted and dropped, and the
 * media type stock clients send (`filetype`, `type`) is kept under a server key.
 */
const CLIENT_KEYS = ['name', 'folderId', 'id', 'fileId', 'sha256'] as const;

/** Longest Upload-Metadata header accepted, in bytes (400 beyond). */
export const MAX_METADATA_BYTES = 4096;

const SHA256 = /^[0-9a-fA-F]{64}$/;

function value(metadata: Metadata, key: string): string | undefined {
  const v = metadata?.[key];
  return v === null || v === undefined || v === '' ? undefined : v;
}

/** Validates the client's metadata (400 INVALID_REQUEST naming the key that is wrong). */
export function parseUploadRequest(metadata: Metadata): UploadRequest {
  const fileId = value(metadata, 'fileId');
  if (fileId !== undefined && !isId(fileId)) throw invalid('fileId must be 32 lowercase hex characters', { field: 'fileId' });
  const rawName = value(metadata, 'name');
  if (rawName === undefined && fileId === undefined) throw invalid('Upload-Metadata must include name (or fileId)', { field: 'name' });
  // With fileId the name is ignored, not even checked: tus replaces content, it never renames.
  const target = fileId === undefined ? { name: normalizeName(rawName) } : { fileId };
  const folderId = value(metadata, 'folderId') ?? null;
  if (folderId !== null && !isId(folderId)) throw invalid('folderId must be 32 lowercase hex characters', { field: 'folderId' });
  const id = value(metadata, 'id');
  if (id !== undefined && !isId(id)) throw invalid('id must be 32 lowercase hex characters', { field: 'id' });
  if (id !== undefined && fileId !== undefined) throw invalid('give either id (a new file) or fileId (new content), not both', { field: 'fileId' });
  const sha256 = value(metadata, 'sha256');
  if (sha256 !== undefined && !SHA256.test(sha256)) throw invalid('sha256 must be 64 hex characters', { field: 'sha256' });
  const request: UploadRequest = { folderId, ...target };
  if (id !== undefined) request.id = id;
  if (sha256 !== undefined) request.sha256 = sha256.toLowerCase();
  const declaredType = value(metadata, KEYS.declaredType) ?? value(metadata, 'filetype') ?? value(metadata, 'type');
  if (declaredType !== undefined) request.declaredType = declaredType;
  return request;
}

/** Conditions of a content replacement, from the creation request's If-Match / If-None-Match. */
export interface Preconditions {
  ifMatch?: string;
  ifNoneMatch?: string;
}

/** The client's metadata without the keys reserved to the server, which a client may not set. */
export function clientMetadata(metadata: Metadata): Record<string, string | null> {
  const own: Record<string, string | null> = {};
  for (const [key, v] of Object.entries(metadata ?? {})) if (!key.startsWith(SERVER_PREFIX)) own[key] = v;
  return own;
}

/** What HEAD echoes of an upload's stored metadata: the documented keys as the client sent them. */
export function echoedMetadata(metadata: Metadata): Record<string, string | null> {
  const echoed: Record<string, string | null> = {};
  for (const key of CLIENT_KEYS) if (metadata && key in metadata) echoed[key] = metadata[key] ?? null;
  return echoed;
}

/**
 * The metadata stored with a new upload: the documented keys the client sent, its declared media
 * type, the owner and the conditions. Nothing else the client sent is kept.
 */
export function storedMetadata(metadata: Metadata, owner: Principal, conditions: Preconditions): Record<string, string | null> {
  const stored = echoedMetadata(metadata);
  const declaredType = value(metadata, 'filetype') ?? value(metadata, 'type');
  if (declaredType !== undefined) stored[KEYS.declaredType] = declaredType;
  stored[KEYS.userId] = owner.userId;
  stored[KEYS.deviceId] = owner.deviceId;
  if (conditions.ifMatch !== undefined) stored[KEYS.ifMatch] = conditions.ifMatch;
  if (conditions.ifNoneMatch !== undefined) stored[KEYS.ifNoneMatch] = conditions.ifNoneMatch;
  return stored;
}

export interface UploadOwner {
  userId: string;
  deviceId: string;
}

/** Who created an upload, as the gateway recorded it; undefined for anything not recorded by us. */
export function ownerOf(metadata: Metadata): UploadOwner | undefined {
  const userId = value(metadata, KEYS.userId);
  const deviceId = value(metadata, KEYS.deviceId);
  return userId && deviceId ? { userId, deviceId } : undefined;
}

export function preconditionsOf(metadata: Metadata): Preconditions {
  const conditions: Preconditions = {};
  const ifMatch = value(metadata, KEYS.ifMatch);
  const ifNoneMatch = value(metadata, KEYS.ifNoneMatch);
  if (ifMatch !== undefined) conditions.ifMatch = ifMatch;
  if (ifNoneMatch !== undefined) conditions.ifNoneMatch = ifNoneMatch;
  return conditions;
}
