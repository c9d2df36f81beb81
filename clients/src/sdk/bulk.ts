import { Readable } from 'node:stream';
import { BULK_MEDIA_TYPE, type BulkDownloadHeader, type BulkUploadHeader, type BulkUploadResponse } from '../../../shared/protocol/bulk';
import type { FilesyncClient } from './client';
import { readJson } from './http';

function frame(header: object, bytes?: Uint8Array): Buffer[] {
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  return bytes && bytes.length ? [length, json, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)] : [length, json];
}

/** `POST /files/bulk`: many files in one request; one result per file, in order (docs/SYNC-CLIENT.md). */
export async function bulkUpload(
  client: FilesyncClient,
  files: { header: Omit<BulkUploadHeader, 'size'>; content: Uint8Array }[],
  signal?: AbortSignal,
): Promise<BulkUploadResponse> {
  const body = Buffer.concat([...files.flatMap((f) => frame({ ...f.header, size: f.content.length }, f.content)), Buffer.alloc(4)]);
  const res = await client.request({ method: 'POST', path: '/files/bulk', headers: { 'content-type': BULK_MEDIA_TYPE }, body, idempotent: false, signal });
  return readJson(res);
}

/** `POST /files/bulk/content`: each file's header and bytes, as they arrive. */
export async function* bulkDownload(client: FilesyncClient, ids: string[], signal?: AbortSignal): AsyncGenerator<{ header: BulkDownloadHeader; bytes: Buffer }> {
  const res = await client.request({
    method: 'POST',
    path: '/files/bulk/content',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ids }),
    idempotent: true,
    signal,
  });
  let pending: Buffer = Buffer.alloc(0);
  for await (const piece of Readable.fromWeb(res.body as never) as AsyncIterable<Buffer>) {
    pending = pending.length ? Buffer.concat([pending, piece]) : piece;
    for (;;) {
      if (pending.length < 4) break;
      const length = pending.readUInt32BE(0);
      if (length === 0) return;
      if (pending.length < 4 + length) break;
      const header = JSON.parse(pending.subarray(4, 4 + length).toString('utf8')) as BulkDownloadHeader;
      if (pending.length < 4 + length + header.size) break;
      yield { header, bytes: pending.subarray(4 + length, 4 + length + header.size) };
      pending = pending.subarray(4 + length + header.size);
    }
  }
  throw new Error('the bulk download ended before its end frame');
}
