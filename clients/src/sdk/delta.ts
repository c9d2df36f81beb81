import { Readable } from 'node:stream';
import type * as P from '../../../shared/protocol';
import { DELTA_MEDIA_TYPE, DELTA_RECORD, packChunks, type ChunkList, type ContentChunk } from '../../../shared/protocol/chunking';
import type { FilesyncClient } from './client';
import { readJson } from './http';

const enc = encodeURIComponent;
const hexToBase64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');

/** One step of a new content: a range of the base (`copy`) or of the new bytes held locally (`data`). */
export type DeltaStep = { kind: 'copy'; baseOffset: number; length: number } | { kind: 'data'; offset: number; length: number };

/**
 * How to build `target` from `base` by chunk hashes: chunks the base holds become copies of its
 * bytes, the others are sent; neighbouring steps of one kind are merged. `dataBytes` is what would
 * travel.
 */
export function planDelta(base: ContentChunk[], target: ContentChunk[]): { steps: DeltaStep[]; dataBytes: number } {
  const where = new Map<string, number>();
  for (const c of base) if (!where.has(`${c.sha256}:${c.length}`)) where.set(`${c.sha256}:${c.length}`, c.offset);
  const steps: DeltaStep[] = [];
  let dataBytes = 0;
  for (const c of target) {
    const at = where.get(`${c.sha256}:${c.length}`);
    const last = steps[steps.length - 1];
    if (at !== undefined) {
      if (last?.kind === 'copy' && last.baseOffset + last.length === at) last.length += c.length;
      else steps.push({ kind: 'copy', baseOffset: at, length: c.length });
    } else {
      dataBytes += c.length;
      if (last?.kind === 'data' && last.offset + last.length === c.offset) last.length += c.length;
      else steps.push({ kind: 'data', offset: c.offset, length: c.length });
    }
  }
  return { steps, dataBytes };
}

/**
 * A delta body (docs/SYNC-CLIENT.md): the chunk list when given, the records of `steps`, with the
 * new bytes read by `read` (offset and length in the new content) as the body is sent, then the end
 * record.
 */
export async function* deltaBody(
  steps: DeltaStep[],
  read: (offset: number, length: number) => AsyncIterable<Uint8Array>,
  /** The new content's chunk list: sent first, the service checks it rather than cutting the content again. */
  chunks?: ContentChunk[],
): AsyncGenerator<Uint8Array> {
  if (chunks) {
    const head = Buffer.alloc(9);
    head[0] = DELTA_RECORD.list;
    head.writeBigUInt64BE(BigInt(chunks.length), 1);
    yield head;
    yield packChunks(chunks);
  }
  for (const s of steps) {
    if (s.kind === 'copy') {
      const head = Buffer.alloc(17);
      head[0] = DELTA_RECORD.copy;
      head.writeBigUInt64BE(BigInt(s.baseOffset), 1);
      head.writeBigUInt64BE(BigInt(s.length), 9);
      yield head;
    } else {
      const head = Buffer.alloc(9);
      head[0] = DELTA_RECORD.data;
      head.writeBigUInt64BE(BigInt(s.length), 1);
      yield head;
      yield* read(s.offset, s.length);
    }
  }
  yield Buffer.of(DELTA_RECORD.end);
}

/** `GET /files/:id/chunks`: the chunk list of the file's current content. */
export async function fetchChunkList(client: FilesyncClient, id: string, signal?: AbortSignal): Promise<ChunkList> {
  return readJson(await client.request({ method: 'GET', path: `/files/${enc(id)}/chunks`, idempotent: true, signal }));
}

/**
 * `POST /files/:id/delta`: new content as a delta against the base `ifMatch` (its SHA-256), whose
 * whole SHA-256 is `sha256`. The body is a stream: the request is sent once, never retried.
 */
export async function uploadDelta(
  client: FilesyncClient,
  id: string,
  input: { body: AsyncIterable<Uint8Array>; ifMatch: string; sha256: string; signal?: AbortSignal },
): Promise<P.File> {
  const res = await client.request({
    method: 'POST',
    path: `/files/${enc(id)}/delta`,
    headers: { 'content-type': DELTA_MEDIA_TYPE, 'if-match': `"${input.ifMatch}"`, 'repr-digest': `sha-256=:${hexToBase64(input.sha256)}:` },
    body: Readable.from(input.body) as unknown as RequestInit['body'],
    idempotent: false,
    once: true,
    signal: input.signal,
  });
  return readJson(res);
}

/**
 * Bytes `start`..`end` (inclusive) of a file's content, only while it is the content `ifMatch` names
 * (412 otherwise); the response is to be streamed.
 */
export async function fetchRange(client: FilesyncClient, id: string, start: number, end: number, ifMatch: string, signal?: AbortSignal): Promise<Response> {
  const res = await client.request({
    method: 'GET',
    path: `/files/${enc(id)}/content`,
    headers: { range: `bytes=${start}-${end}`, 'if-match': `"${ifMatch}"` },
    idempotent: true,
    signal,
  });
  if (res.status !== 206) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`a range of ${id} came back whole (HTTP ${res.status})`);
  }
  return res;
}
