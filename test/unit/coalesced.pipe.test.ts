import { randomBytes } from 'node:crypto';
import { PassThrough, Readable, Writable } from 'node:stream';
import { sendCoalesced } from '../../services/gateway/http/coalesced.pipe';

const KiB = 1024;

/** A slow destination: each write completes a turn later; records what it got and how much it held at most. */
function slowSink(highWaterMark = 16 * KiB) {
  const got: Buffer[] = [];
  let held = 0;
  let writes = 0;
  const sink = new Writable({
    highWaterMark,
    writev(chunks, done) {
      writes++;
      for (const { chunk } of chunks) got.push(chunk as Buffer);
      setImmediate(done);
    },
    write(chunk, _enc, done) {
      writes++;
      got.push(chunk as Buffer);
      setImmediate(done);
    },
  });
  const watch = setInterval(() => (held = Math.max(held, sink.writableLength)), 0);
  return { sink, got: () => Buffer.concat(got), held: () => held, writes: () => writes, stop: () => clearInterval(watch) };
}

test('every byte arrives in order, in fewer writes than chunks, and the destination is ended', async () => {
  const chunks = Array.from({ length: 200 }, (_, i) => randomBytes(1 + ((i * 7919) % (64 * KiB))));
  const source = new PassThrough();
  const out = slowSink();
  const done = sendCoalesced(source, out.sink);
  // Several chunks per turn, as a socket delivers them.
  for (let i = 0; i < chunks.length; i += 8) {
    for (const c of chunks.slice(i, i + 8)) source.write(c);
    await new Promise((r) => setImmediate(r));
  }
  source.end();
  await done;
  out.stop();
  expect(out.sink.writableFinished).toBe(true);
  expect(out.got().equals(Buffer.concat(chunks))).toBe(true);
  expect(out.writes()).toBeLessThan(chunks.length);
});

test('a source faster than the destination is held back: what waits in memory stays bounded', async () => {
  const total = 32 * 1024 * KiB;
  const source = Readable.from(
    (function* () {
      for (let sent = 0; sent < total; sent += 64 * KiB) yield Buffer.alloc(64 * KiB, sent / (64 * KiB));
    })(),
    { objectMode: false },
  );
  const out = slowSink();
  await sendCoalesced(source, out.sink);
  out.stop();
  expect(out.got().length).toBe(total);
  expect(out.held()).toBeLessThanOrEqual(2 * 1024 * KiB);
});

test('a failing source cuts the destination; a destination that goes away stops the source', async () => {
  const failing = new PassThrough();
  const cut = slowSink();
  const first = sendCoalesced(failing, cut.sink);
  failing.write(Buffer.alloc(10));
  failing.destroy(new Error('store gone'));
  await first;
  cut.stop();
  expect(cut.sink.destroyed).toBe(true);
  expect(cut.sink.writableFinished).toBe(false);

  const endless = new PassThrough();
  const gone = slowSink();
  const second = sendCoalesced(endless, gone.sink);
  endless.write(Buffer.alloc(10));
  gone.sink.destroy();
  await second;
  gone.stop();
  expect(endless.destroyed).toBe(true);
});
