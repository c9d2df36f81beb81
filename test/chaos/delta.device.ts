import { createHash, randomBytes } from 'node:crypto';
import { FilesyncClient } from '../../clients/src/sdk/client';
import { deltaBody, fetchChunkList, planDelta, uploadDelta } from '../../clients/src/sdk/delta';
import { AbortedError, ApiError } from '../../clients/src/sdk/errors';
import { chunksOf, type ContentChunk } from '../../shared/protocol/chunking';

const KiB = 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** One write of a file the service acknowledged: its rev and the SHA-256 of its bytes. */
export interface DeltaAck {
  rev: number;
  sha256: string;
  device: string;
  /** Acknowledged by a later look at the file, the delta's own answer having been lost. */
  late: boolean;
}

/** A file shared by the devices of one user, and every write the service acknowledged on it. */
export interface DeltaFile {
  id: string;
  createdRev: number;
  acks: DeltaAck[];
  /** The bytes of the acknowledged write with the highest rev: what the file must hold at the end. */
  last: { rev: number; bytes: Buffer };
  /** Deltas whose outcome stayed unknown (answer lost, then the file changed by the other device). */
  unconfirmed: number;
  /** A delta in flight or unresolved when the run stopped. */
  unresolved: boolean;
}

export interface DeltaCounters {
  requests: number;
  acknowledged: number;
  ackedLate: number;
  /** 412 answers, and those where the base had been replaced by the other device (the edit redone on the new content). */
  preconditionFailed: number;
  rebased: number;
  /** Failed requests by kind: HTTP status, `network` (cut, refused), `hung` (no answer in time), `answer dropped` (by the device itself). */
  failures: Record<string, number>;
  /** 200 answers naming other bytes than the ones sent, and refusals no valid delta should get. */
  wrongAnswers: number;
  examples: string[];
}

interface Local {
  bytes: Buffer;
  sha256: string;
  /** The chunk list kept for these bytes, as the client keeps it in its journal. */
  chunks: ContentChunk[];
}

type Edit = (bytes: Buffer) => Buffer;

/** Overwrites, inserts, appends or cuts a stretch, keeping the size within a quarter of `maxSize` and `maxSize`. */
function randomEdit(maxSize: number): Edit {
  const roll = Math.random();
  const len = 1 + Math.floor(Math.random() * 256 * KiB);
  const fresh = randomBytes(len);
  const at = Math.random();
  return (b) => {
    const pos = Math.floor(at * b.length);
    if (b.length + len > maxSize || (roll < 0.15 && b.length - len >= maxSize / 4)) return Buffer.concat([b.subarray(0, pos), b.subarray(Math.min(b.length, pos + len))]);
    if (roll < 0.5) return Buffer.concat([b.subarray(0, pos), fresh, b.subarray(Math.min(b.length, pos + len))]);
    if (roll < 0.8) return Buffer.concat([b.subarray(0, pos), fresh.subarray(0, Math.min(len, 64 * KiB)), b.subarray(pos)]);
    return Buffer.concat([b, fresh]);
  };
}

/**
 * A device editing large files and sending each edit as a delta upload through the SDK, as the
 * `filesync` client does: the base's chunk list kept from its last write (now and then fetched with
 * GET /chunks instead), If-Match on the base, the new chunk list and the whole SHA-256 declared. A
 * delta is never resent blind: after a lost answer or a 412 the device looks at the file. Holding
 * the new bytes, the delta was committed; holding the base, it is sent again; holding other bytes
 * (the other device's), the device takes them as its base and makes its edit again on them.
 */
export class DeltaDevice {
  private readonly local = new Map<string, Local>();
  readonly client: FilesyncClient;

  constructor(
    readonly name: string,
    server: string,
    token: string,
    private readonly files: DeltaFile[],
    private readonly counters: DeltaCounters,
    private readonly hangMs: number,
    /** The largest a file may grow: large enough for deltas (on S3, for copies in the bucket), small enough for a quick run. */
    private readonly maxSize: number,
  ) {
    this.client = new FilesyncClient({ server, token });
  }

  /** Starts from the content each file has now. */
  async load(): Promise<void> {
    for (const f of this.files) this.local.set(f.id, await this.download(f.id));
  }

  async run(stop: () => boolean, drainUntil: () => number): Promise<void> {
    while (!stop()) {
      const f = this.files[Math.floor(Math.random() * this.files.length)]!;
      if (!(await this.send(f, randomEdit(this.maxSize), drainUntil))) return;
      await sleep(400 + Math.random() * 800);
    }
  }

  /** Sends one edit until the service holds it (true), or the drain time is over (false). */
  private async send(f: DeltaFile, edit: Edit, drainUntil: () => number): Promise<boolean> {
    let mine = this.local.get(f.id)!;
    let uncertain = false;
    for (;;) {
      if (Date.now() > drainUntil()) {
        f.unresolved = true;
        return false;
      }
      const target = edit(mine.bytes);
      const targetSha = sha256(target);
      const chunks = chunksOf(target);
      const base = Math.random() < 0.2 ? await this.listOf(f.id, mine) : mine.chunks;
      const plan = planDelta(base, chunks);
      this.counters.requests++;
      // Now and then the device stops listening once its body is sent: an answer lost on the way back.
      const drop = Math.random() < 0.1 ? new AbortController() : undefined;
      const sent = drop && (() => void setTimeout(() => drop.abort(), Math.random() * 50));
      const hang = AbortSignal.timeout(this.hangMs);
      try {
        const file = await uploadDelta(this.client, f.id, {
          body: paced(deltaBody(plan.steps, (offset, length) => pieces(target.subarray(offset, offset + length)), chunks), sent),
          ifMatch: mine.sha256,
          sha256: targetSha,
          signal: drop ? AbortSignal.any([hang, drop.signal]) : hang,
        });
        if (file.sha256 !== targetSha || file.size !== target.length) this.wrong(`${f.id}: answered ${file.sha256} (${file.size} bytes) for ${targetSha} (${target.length})`);
        this.acknowledge(f, file.rev, { bytes: target, sha256: targetSha, chunks }, false);
        return true;
      } catch (err) {
        const kind = drop?.signal.aborted && !hang.aborted ? 'answer dropped' : failureKind(err);
        this.counters.failures[kind] = (this.counters.failures[kind] ?? 0) + 1;
        if (kind === '412') this.counters.preconditionFailed++;
        else if (kind === '400' || kind === '404' || kind === '507') this.wrong(`${f.id}: ${kind} ${(err as Error).message}`);
        else uncertain = true;
      }
      // Where the file stands decides: our bytes, the base, or the other device's.
      const now = await this.current(f.id, drainUntil);
      if (!now) {
        f.unresolved = true;
        return false;
      }
      if (now.sha256 === targetSha) {
        this.counters.ackedLate++;
        this.acknowledge(f, now.rev, { bytes: target, sha256: targetSha, chunks }, true);
        return true;
      }
      if (now.sha256 === mine.sha256) continue;
      if (uncertain) f.unconfirmed++;
      uncertain = false;
      this.counters.rebased++;
      mine = await this.download(f.id);
      this.local.set(f.id, mine);
    }
  }

  private acknowledge(f: DeltaFile, rev: number, bytes: Local, late: boolean): void {
    this.local.set(f.id, bytes);
    this.counters.acknowledged++;
    f.acks.push({ rev, sha256: bytes.sha256, device: this.name, late });
    if (rev > f.last.rev) f.last = { rev, bytes: bytes.bytes };
  }

  private wrong(what: string): void {
    this.counters.wrongAnswers++;
    if (this.counters.examples.length < 10) this.counters.examples.push(what);
  }

  /** The service's list of the base when it still holds that base, else the kept one. */
  private async listOf(id: string, mine: Local): Promise<ContentChunk[]> {
    const list = await fetchChunkList(this.client, id, AbortSignal.timeout(this.hangMs)).catch(() => undefined);
    return list?.sha256 === mine.sha256 ? list.chunks : mine.chunks;
  }

  /** The file's rev and SHA-256, asked again until answered or the drain time is over. */
  private async current(id: string, drainUntil: () => number): Promise<{ rev: number; sha256: string } | undefined> {
    while (Date.now() < drainUntil()) {
      const file = await this.client.getFile(id).catch(() => undefined);
      if (file?.sha256) return { rev: file.rev, sha256: file.sha256 };
      await sleep(300);
    }
    return undefined;
  }

  /** The file's current bytes, checked against their SHA-256, asked again until they arrive whole. */
  async download(id: string): Promise<Local> {
    for (const giveUp = Date.now() + 120_000; Date.now() < giveUp; ) {
      try {
        const file = await this.client.getFile(id);
        const res = await this.client.download(id, { signal: AbortSignal.timeout(this.hangMs) });
        const bytes = Buffer.from(await res.arrayBuffer());
        if (res.status === 200 && sha256(bytes) === file.sha256) return { bytes, sha256: file.sha256, chunks: chunksOf(bytes) };
      } catch {
        // The gateway is away: asked again below.
      }
      await sleep(300);
    }
    throw new Error(`the content of ${id} could not be read for two minutes`);
  }
}

/** New bytes in pieces of 64 KiB, as a file is read. */
async function* pieces(bytes: Buffer): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += 64 * KiB) yield bytes.subarray(at, at + 64 * KiB);
}

/**
 * The body sent at the pace of a slow link (a pause after each record or piece): a delta takes a
 * second or so, so the gateway's SIGKILL finds some in the middle of their assembly.
 */
async function* paced(body: AsyncIterable<Uint8Array>, sent?: () => void): AsyncGenerator<Uint8Array> {
  for await (const piece of body) {
    yield piece;
    await sleep(Math.random() * 60);
  }
  sent?.();
}

function failureKind(err: unknown): string {
  if (err instanceof ApiError) return String(err.status);
  if (err instanceof AbortedError || (err as Error).name === 'TimeoutError') return 'hung';
  return 'network';
}
