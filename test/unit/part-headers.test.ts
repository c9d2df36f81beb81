import type { IncomingMessage } from 'node:http';
import { PassThrough, Writable } from 'node:stream';
import { feedNotingFileType, fileTypeDeclared } from '../../services/gateway/files/part.headers';
import { multipartBody, type RawPart } from '../support/fixtures';

/** Feeds a multipart body in chunks of `size` bytes and resolves with what was noted about the file part. */
async function noted(parts: RawPart[], size: number): Promise<{ declared: boolean | undefined; received: number; sent: number }> {
  const { boundary, body } = multipartBody(parts);
  const req = Object.assign(new PassThrough(), { headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
  let received = 0;
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      received += chunk.length;
      done();
    },
  });
  feedNotingFileType(req as unknown as IncomingMessage, sink);
  for (let i = 0; i < body.length; i += size) req.write(body.subarray(i, i + size));
  req.end();
  await new Promise((resolve) => sink.on('finish', resolve));
  return { declared: fileTypeDeclared(req), received, sent: body.length };
}

const field = { name: 'name', content: 'x'.repeat(300) };

describe('the file part type watch', () => {
  test.each([1, 7, 64, 100000])('notes a declared Content-Type, whatever the chunk size (%i), and passes every byte on', async (size) => {
    const result = await noted([field, { name: 'file', filename: 'a.png', contentType: 'image/png', content: 'data' }], size);

    expect(result).toEqual({ declared: true, received: result.sent, sent: result.sent });
  });

  test.each([1, 7, 64, 100000])('notes a missing Content-Type, whatever the chunk size (%i)', async (size) => {
    const result = await noted([field, { name: 'file', filename: 'a.png', content: 'data' }], size);

    expect(result.declared).toBe(false);
  });

  test('looks only at the part named "file"', async () => {
    const result = await noted([{ name: 'files', filename: 'b.png', content: 'b' }, { name: 'file', filename: 'a.png', contentType: 'image/png', content: 'a' }], 5);

    expect(result.declared).toBe(true);
  });

  test('says nothing when there is no file part', async () => {
    expect((await noted([field], 16)).declared).toBeUndefined();
  });
});
