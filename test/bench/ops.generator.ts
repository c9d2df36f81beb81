import { randomBytes } from 'node:crypto';

/** A small seeded PRNG (mulberry32): the same run generates the same ops. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const newId = () => randomBytes(16).toString('hex');

/**
 * The mix of one batch, cycled op by op (and across batches of one op): half creates (4 files, 1
 * folder), 2 renames, 2 moves and 1 delete in every 10 ops.
 */
const PATTERN = ['file', 'file', 'folder', 'rename', 'file', 'move', 'file', 'rename', 'delete', 'move'] as const;

export interface OpMix {
  create: number;
  update: number;
  move: number;
  delete: number;
}

interface LiveFile {
  id: string;
  parentId: string | null;
}

/**
 * One device's outbox. Every op is meant to change state: renames, moves and deletes target files the
 * device created earlier (in an earlier batch or earlier in the same one), names are unique, and moves
 * go to one of the device's folders or the root. So a batch that reports anything but `applied` for
 * every op is an error worth counting, not a no-op.
 */
export class OpsGenerator {
  private readonly random: () => number;
  private readonly folders: string[] = [];
  private readonly files: LiveFile[] = [];
  private nextOpId = 1;
  private counter = 0;
  private cursor = 0;
  readonly mix: OpMix = { create: 0, update: 0, move: 0, delete: 0 };

  constructor(
    private readonly tag: string,
    seed: number,
  ) {
    this.random = prng(seed);
  }

  private pick<T>(list: T[]): T {
    return list[Math.floor(this.random() * list.length)]!;
  }

  private createFile(): object {
    const id = newId();
    const parentId = this.folders.length > 0 && this.random() < 0.5 ? this.pick(this.folders) : null;
    const n = this.counter++;
    this.files.push({ id, parentId });
    this.mix.create++;
    return {
      opId: this.nextOpId++,
      type: 'create',
      resourceId: id,
      payload: { resourceType: 'file', name: `${this.tag}-file-${n}.txt`, parentId, size: 1000 + n, mimeType: 'text/plain' },
    };
  }

  private createFolder(): object {
    const id = newId();
    this.folders.push(id);
    this.mix.create++;
    return { opId: this.nextOpId++, type: 'create', resourceId: id, payload: { resourceType: 'folder', name: `${this.tag}-dir-${this.counter++}` } };
  }

  next(): object {
    const kind = PATTERN[this.cursor++ % PATTERN.length]!;
    if (kind === 'folder') return this.createFolder();
    if (kind === 'file' || this.files.length === 0) return this.createFile();
    const index = Math.floor(this.random() * this.files.length);
    const target = this.files[index]!;
    switch (kind) {
      case 'rename':
        this.mix.update++;
        return { opId: this.nextOpId++, type: 'update', resourceId: target.id, payload: { name: `${this.tag}-renamed-${this.counter++}.txt` } };
      case 'move': {
        const choices = [null, ...this.folders].filter((f) => f !== target.parentId);
        const parentId = this.pick(choices);
        target.parentId = parentId;
        this.mix.move++;
        return { opId: this.nextOpId++, type: 'move', resourceId: target.id, payload: { parentId } };
      }
      case 'delete':
        this.files[index] = this.files[this.files.length - 1]!;
        this.files.pop();
        this.mix.delete++;
        return { opId: this.nextOpId++, type: 'delete', resourceId: target.id };
    }
  }

  /** The `ops` array of the next batch, as JSON text. */
  batch(size: number): string {
    const ops: object[] = [];
    for (let i = 0; i < size; i++) ops.push(this.next());
    return JSON.stringify(ops);
  }
}
