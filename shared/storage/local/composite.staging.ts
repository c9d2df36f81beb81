import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BaseCopyStaging } from '../base-copy';
import { ContentNotFoundError, type ByteRange, type StagedContent } from '../content.store';
import { HashMeter } from '../hash.meter';
import { PIECES_FILE, piecesOf, readManifest, type CompositeManifest, type CompositePiece } from './composite';
import { FlushBehind, openFor, syncFolder } from './durable';

/** Copies shorter than this are written again with the new bytes: a piece of their own would cost more reads than it saves writes. */
export const MIN_LINKED_COPY = 256 * 1024;
/** Pieces a composite may have: once a staging has this many, later copies are written again. */
export const MAX_PIECES = 64;
/**
 * A base with this many pieces is not copied from: the new content is written whole, as one file,
 * so that a file edited again and again is read from a bounded number of pieces.
 */
export const COMPACT_AT = 32;

/** The file of a composite's new bytes, and the prefix of its links to the base's files. */
const NEW_BYTES = 'n';
const LINK = 'b';

export interface CompositeStagingTarget {
  /** The staging key of the composite's folder, and that folder. */
  stagingKey: string;
  dir: string;
  /** The base's store key (named in a not-found error) and where it is: a file or a composite's folder. */
  baseKey: string;
  basePath: string;
  maxBytes: number;
  /** Stages the bytes as one file, as any upload (a base too fragmented to copy from). */
  plain: (source: Readable) => Promise<StagedContent>;
}

/** Where the base's bytes are: its file, or its composite's manifest. */
type BaseShape = { kind: 'file' } | { kind: 'composite'; manifest: CompositeManifest };

async function shapeOf(target: CompositeStagingTarget): Promise<BaseShape> {
  try {
    const stat = await fs.stat(target.basePath);
    if (stat.isFile()) return { kind: 'file' };
    return { kind: 'composite', manifest: await readManifest(target.basePath, target.baseKey) };
  } catch (err) {
    throw (err as NodeJS.ErrnoException).code === 'ENOENT' ? new ContentNotFoundError(target.baseKey) : err;
  }
}

/**
 * New content staged on the local driver as a composite (composite.ts): each long copied range of
 * the base becomes pieces in hard links to the base's files, and only the other bytes are written.
 * The source carries every byte all the same, and all of them are hashed, so the size and SHA-256
 * of the staged content are those of the bytes that went by, as with `stage`. Any failure removes
 * the staging folder.
 */
export class CompositeStaging implements BaseCopyStaging {
  private readonly copies: Array<{ at: number; range: ByteRange }> = [];
  private readonly pieces: CompositePiece[] = [];
  private written = 0;
  private links = new Map<string, string>();

  constructor(private readonly target: CompositeStagingTarget) {}

  copying(position: number, range: ByteRange): void {
    if (range.end - range.start + 1 >= MIN_LINKED_COPY) this.copies.push({ at: position, range });
  }

  async stage(source: Readable): Promise<StagedContent> {
    const { dir } = this.target;
    const base = await shapeOf(this.target);
    if (base.kind === 'composite' && base.manifest.pieces.length >= COMPACT_AT) return this.target.plain(source);
    await fs.mkdir(path.dirname(dir), { recursive: true });
    await fs.mkdir(dir);
    try {
      await this.linkBase(base);
    } catch (err) {
      await fs.rm(dir, { recursive: true, force: true });
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ContentNotFoundError(this.target.baseKey);
      // A file system without hard links (some network and FUSE mounts), or a file linked as often as
      // it allows (EMLINK, after a long history of edits): the new content is written whole.
      return this.target.plain(source);
    }
    try {
      const meter = new HashMeter(this.target.maxBytes);
      const handle = await openFor(source, path.join(dir, NEW_BYTES), 'wx');
      await pipeline(source, meter, this.splitter(base), new FlushBehind(handle), handle.createWriteStream({ highWaterMark: 1024 * 1024, flush: true }));
      const used = new Set(this.pieces.map((p) => p.file));
      for (const file of [NEW_BYTES, ...this.links.values()]) if (!used.has(file)) await fs.rm(path.join(dir, file));
      const manifest: CompositeManifest = { size: meter.received, pieces: this.pieces };
      await fs.writeFile(path.join(dir, PIECES_FILE), JSON.stringify(manifest), { flag: 'wx', flush: true });
      // Its links and files on disk before the folder is placed (shared/storage/local/durable.ts).
      await syncFolder(dir);
      return { stagingKey: this.target.stagingKey, size: meter.received, sha256: meter.digest() };
    } catch (err) {
      await fs.rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Links the base's files into the staging folder first, so the bytes copied are held whatever happens to the base meanwhile. */
  private async linkBase(base: BaseShape): Promise<void> {
    const sources = base.kind === 'file' ? [this.target.basePath] : [...new Set(base.manifest.pieces.map((p) => path.join(this.target.basePath, p.file)))];
    for (const [i, source] of sources.entries()) {
      await fs.link(source, path.join(this.target.dir, `${LINK}${i}`));
      this.links.set(base.kind === 'file' ? '' : path.basename(source), `${LINK}${i}`);
    }
  }

  private add(piece: CompositePiece): void {
    const last = this.pieces[this.pieces.length - 1];
    if (last && last.file === piece.file && last.start + last.length === piece.start) last.length += piece.length;
    else this.pieces.push(piece);
  }

  /** The pieces of base bytes [start, start + length) in this staging's links. */
  private addCopy(base: BaseShape, start: number, length: number): void {
    if (base.kind === 'file') return this.add({ file: this.links.get('')!, start, length });
    for (const p of piecesOf(base.manifest, start, start + length)) this.add({ ...p, file: this.links.get(p.file)! });
  }

  /** Passes on the bytes to write, and records every byte as a piece: a range of a link, or of the new bytes. */
  private splitter(base: BaseShape): Transform {
    let position = 0;
    const splitter: Transform = new Transform({
      transform: (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) => {
        const out: Buffer[] = [];
        for (let at = 0; at < chunk.length; ) {
          const here = position + at;
          while (this.copies.length > 0 && this.copies[0]!.at + (this.copies[0]!.range.end - this.copies[0]!.range.start + 1) <= here) this.copies.shift();
          const copy = this.copies[0];
          // A copy is linked from its first byte on, while the pieces are few; past that its bytes are written.
          if (copy && copy.at <= here && this.pieces.length < MAX_PIECES) {
            const take = Math.min(chunk.length - at, copy.at + (copy.range.end - copy.range.start + 1) - here);
            this.addCopy(base, copy.range.start + (here - copy.at), take);
            at += take;
            continue;
          }
          const take = Math.min(chunk.length - at, copy && copy.at > here ? copy.at - here : chunk.length - at);
          out.push(chunk.subarray(at, at + take));
          this.add({ file: NEW_BYTES, start: this.written, length: take });
          this.written += take;
          at += take;
        }
        position += chunk.length;
        for (const piece of out) splitter.push(piece);
        done();
      },
    });
    return splitter;
  }
}
