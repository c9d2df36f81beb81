import { invalid, type AppError } from '../errors';
import { isId } from '../ids';
import { isLosslessNumber, isPlainObject, readInt64, stringifyLossless } from '../json';
import { normalizeName } from '../names';
import { OP_TYPES } from '../protocol';

/** How an op is named back to the client: its opId exactly as sent, its type and resource id. */
export interface OpEcho {
  opId: { raw: string; kind: 'number' | 'string' } | null;
  type: string | null;
  resourceId: string | null;
}

interface OpBase {
  echo: OpEcho;
  /** Canonical decimal form of the 64-bit operation id. */
  opId: string;
  refType: string | null;
  refId: string | null;
  resourceId: string | null;
  /** What the trace stores: the payload object as JSON text, `{}` when it was empty or not an object. */
  tracePayload: string;
}

export type ParsedOp =
  | (OpBase & { type: 'create'; resourceId: string; create: CreatePayload })
  | (OpBase & Conditional & { type: 'update'; resourceId: string; name: string })
  | (OpBase & Conditional & { type: 'move'; resourceId: string; parentId: string | null })
  | (OpBase & Conditional & { type: 'delete'; resourceId: string })
  | (OpBase & { type: 'share' | 'share_link' });

/** An op that may name the rev its client last saw: it applies only while the resource is still at it. */
interface Conditional {
  baseRev?: number;
}

export interface CreatePayload {
  resourceType: 'file' | 'folder';
  name: string;
  parentId: string | null;
  size: number;
  mimeType: string | null;
}

export type OpParseResult = { ok: true; op: ParsedOp } | { ok: false; echo: OpEcho; error: AppError };

/** Reads what can be echoed of an op, even a malformed one. */
export function echoOf(raw: unknown): OpEcho {
  if (!isPlainObject(raw)) return { opId: null, type: null, resourceId: null };
  const { opId, type, resourceId } = raw;
  return {
    opId: isLosslessNumber(opId) ? { raw: opId.value, kind: 'number' } : typeof opId === 'string' ? { raw: opId, kind: 'string' } : null,
    type: typeof type === 'string' ? type : null,
    resourceId: typeof resourceId === 'string' ? resourceId : null,
  };
}

function optionalParentId(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (!isId(value)) throw invalid('payload.parentId must be a resource id or null');
  return value;
}

function parseCreate(payload: Record<string, unknown>): CreatePayload {
  const { resourceType, name, parentId, size, mimeType } = payload;
  if (resourceType !== 'file' && resourceType !== 'folder') throw invalid('payload.resourceType must be "file" or "folder"');
  const parsed: CreatePayload = {
    resourceType,
    name: normalizeName(name, 'payload.name'),
    parentId: optionalParentId(parentId),
    size: 0,
    mimeType: null,
  };
  if (resourceType === 'file') {
    if (size !== undefined && size !== null) {
      const bytes = isLosslessNumber(size) ? readInt64(size) : undefined;
      if (bytes === undefined || BigInt(bytes) < 0n || BigInt(bytes) > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw invalid('payload.size must be a non-negative integer');
      }
      parsed.size = Number(bytes);
    }
    if (mimeType !== undefined && mimeType !== null && mimeType !== '') {
      if (typeof mimeType !== 'string' || mimeType.length > 255 || !/^[\x21-\x7e]+\/[\x21-\x7e]+$/.test(mimeType)) {
        throw invalid('payload.mimeType must be a media type such as "text/plain"');
      }
      parsed.mimeType = mimeType.toLowerCase();
    }
  }
  return parsed;
}

/**
 * The op's `baseRev`: a positive integer, or undefined when absent. Read from the op itself, or from
 * its payload when the op has none there (clients disagree on where conditions go).
 */
function parseBaseRev(raw: Record<string, unknown>, payload: Record<string, unknown>): Conditional {
  const value = raw.baseRev !== undefined ? raw.baseRev : payload.baseRev;
  if (value === undefined) return {};
  const n = isLosslessNumber(value) ? Number(value.value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw invalid('baseRev must be a positive integer (the rev the client last saw)');
  return { baseRev: n };
}

/**
 * Validates one op of a batch. Never throws: a malformed op becomes an error result, reported at its
 * place in the batch with whatever of it can be echoed.
 */
export function parseOp(raw: unknown): OpParseResult {
  const echo = echoOf(raw);
  try {
    if (!isPlainObject(raw)) throw invalid('an op must be an object');
    const opId = readInt64(raw.opId);
    if (opId === undefined) throw invalid('opId must be a 64-bit integer, as a number or a decimal string');
    const type = raw.type;
    if (typeof type !== 'string' || !(OP_TYPES as readonly string[]).includes(type)) {
      throw invalid(`type must be one of ${OP_TYPES.join(', ')}`);
    }
    let refId: string | null = null;
    if (raw.refId !== undefined && raw.refId !== null && raw.refId !== '') {
      const parsed = readInt64(raw.refId);
      if (parsed === undefined) throw invalid('refId must be a 64-bit integer, as a number or a decimal string');
      refId = parsed;
    }
    let refType: string | null = null;
    if (raw.refType !== undefined && raw.refType !== null && raw.refType !== '') {
      if (typeof raw.refType !== 'string' || raw.refType.length > 64) throw invalid('refType must be a string of at most 64 characters');
      refType = raw.refType;
    }
    let resourceId: string | null = null;
    if (raw.resourceId !== undefined && raw.resourceId !== null && raw.resourceId !== '') {
      if (!isId(raw.resourceId)) throw invalid('resourceId must be 32 lowercase hex characters');
      resourceId = raw.resourceId;
    }
    const payload = isPlainObject(raw.payload) ? raw.payload : {};
    const base = { echo, opId, refType, refId, tracePayload: stringifyLossless(payload) };

    if (type === 'share' || type === 'share_link') return { ok: true, op: { ...base, type, resourceId } };
    if (resourceId === null) throw invalid(`resourceId is required for ${type}`);
    switch (type) {
      case 'create':
        return { ok: true, op: { ...base, type, resourceId, create: parseCreate(payload) } };
      case 'update':
        return { ok: true, op: { ...base, type, resourceId, name: normalizeName(payload.name, 'payload.name'), ...parseBaseRev(raw, payload) } };
      case 'move':
        if (!('parentId' in payload)) throw invalid('payload.parentId is required for move (null for the root)');
        return { ok: true, op: { ...base, type, resourceId, parentId: optionalParentId(payload.parentId), ...parseBaseRev(raw, payload) } };
      default:
        return { ok: true, op: { ...base, type: 'delete', resourceId, ...parseBaseRev(raw, payload) } };
    }
  } catch (err) {
    return { ok: false, echo, error: err as AppError };
  }
}
