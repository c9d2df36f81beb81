import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachPiece, PIECE_BYTES, sha256OfFile } from '../../clients/src/cli/file.pieces';
import { sha256InThread } from '../../clients/src/cli/chunk.reuse';

/** The client's reads of a whole file through two reused buffers (clients/src/cli/file.pieces.ts). */
describe('reading a file piece by piece', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pieces-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

  test.each([0, 1, PIECE_BYTES, 2 * PIECE_BYTES + 17])('%i bytes: every byte once, in order, and the same digest from both hashes of a file', async (size) => {
    const bytes = randomBytes(size);
    const file = path.join(dir, `f${size}`);
    writeFileSync(file, bytes);
    // Copied as they come: a piece is valid only until the callback returns.
    const copies: Buffer[] = [];
    const read = await forEachPiece(file, (piece) => {
      expect(piece.length).toBeLessThanOrEqual(PIECE_BYTES);
      copies.push(Buffer.from(piece));
    });
    expect(read).toBe(size);
    expect(Buffer.concat(copies).equals(bytes)).toBe(true);
    expect(await sha256OfFile(file)).toEqual({ sha256: digest(bytes), size });
    expect(await sha256InThread(file)).toBe(digest(bytes));
  });

  test('two files read at once each get their own bytes', async () => {
    const a = randomBytes(3 * PIECE_BYTES + 5);
    const b = randomBytes(2 * PIECE_BYTES + 9);
    writeFileSync(path.join(dir, 'a'), a);
    writeFileSync(path.join(dir, 'b'), b);
    const [da, db] = await Promise.all([sha256OfFile(path.join(dir, 'a')), sha256OfFile(path.join(dir, 'b'))]);
    expect(da.sha256).toBe(digest(a));
    expect(db.sha256).toBe(digest(b));
  });

  test('an abort stops the read, and a missing file is an error, never a digest', async () => {
    const file = path.join(dir, 'aborted');
    writeFileSync(file, randomBytes(3 * PIECE_BYTES));
    const controller = new AbortController();
    let pieces = 0;
    await expect(
      forEachPiece(
        file,
        () => {
          pieces += 1;
          controller.abort();
        },
        controller.signal,
      ),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(pieces).toBe(1);
    await expect(sha256OfFile(path.join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(sha256InThread(path.join(dir, 'missing'))).rejects.toThrow(/ENOENT/);
  });
});
