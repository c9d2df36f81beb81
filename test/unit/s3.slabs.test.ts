import { randomBytes } from 'node:crypto';
import { Slabs } from '../../shared/storage/s3/s3.sockets';

const KiB = 1024;

test('a chunk holds the bytes copied, and no later chunk overwrites one whose write has not completed', () => {
  const slabs = new Slabs(64 * KiB, 4);
  const pending: { chunk: Buffer; expected: Buffer }[] = [];
  for (let i = 0; i < 40; i++) {
    const source = randomBytes(20 * KiB);
    const { chunk } = slabs.copy(source, 1000, 10 * KiB);
    pending.push({ chunk, expected: Buffer.from(source.subarray(1000, 1000 + 10 * KiB)) });
  }
  // Nothing was reported written: every chunk still holds its own bytes.
  for (const { chunk, expected } of pending) expect(chunk.equals(expected)).toBe(true);
});

test('a slab is reused once every write of its chunks completed, and only then', () => {
  const slabs = new Slabs(64 * KiB, 4);
  const first = [slabs.copy(randomBytes(32 * KiB), 0, 32 * KiB), slabs.copy(randomBytes(32 * KiB), 0, 32 * KiB)];
  const firstMemory = first[0]!.chunk.buffer;
  // The slab is full: the next chunk comes from another one while the first slab's writes are pending.
  const second = slabs.copy(randomBytes(32 * KiB), 0, 32 * KiB);
  expect(second.chunk.buffer).not.toBe(firstMemory);
  first[0]!.written();
  slabs.copy(randomBytes(32 * KiB), 0, 32 * KiB);
  // One write of the first slab is still pending: it is not handed out again.
  expect(slabs.copy(randomBytes(32 * KiB), 0, 32 * KiB).chunk.buffer).not.toBe(firstMemory);
  first[1]!.written();
  // A completion reported twice counts once.
  first[1]!.written();
  // The current slab has room for one more chunk; the one after it starts a slab: the first, reused.
  expect(slabs.copy(randomBytes(32 * KiB), 0, 32 * KiB).chunk.buffer).not.toBe(firstMemory);
  const source = randomBytes(32 * KiB);
  const reused = slabs.copy(source, 0, 32 * KiB);
  expect(reused.chunk.buffer).toBe(firstMemory);
  expect(reused.chunk.equals(source)).toBe(true);
});

test("a lane holds its slab until it is released and every chunk taken from it was written", () => {
  const slabs = new Slabs(64 * KiB, 4);
  const lane = slabs.lane(64 * KiB);
  const memory = lane.space.buffer;
  lane.space.fill(7, 0, 16 * KiB);
  const { chunk, written } = lane.take(0, 16 * KiB);
  lane.advance(16 * KiB);
  expect(lane.space.length).toBe(48 * KiB);
  // The slab is full: what comes next is carved from another one.
  expect(slabs.copy(randomBytes(KiB), 0, KiB).chunk.buffer).not.toBe(memory);
  lane.release();
  // Released, but a chunk's write is pending: the slab is still not handed out.
  slabs.copy(randomBytes(63 * KiB), 0, 63 * KiB);
  expect(slabs.copy(randomBytes(KiB), 0, KiB).chunk.buffer).not.toBe(memory);
  expect(chunk.every((b) => b === 7)).toBe(true);
  written();
  // Now it is: the next slab taken is that one.
  expect(slabs.lane(64 * KiB).space.buffer).toBe(memory);
});
