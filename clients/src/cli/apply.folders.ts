import { promises as fs } from 'node:fs';
import type { RemoteNode } from './journal';
import type { LiveTree } from './live.tree';
import { statOf, toBase, type SyncContext } from './context';
import { joinPath, placedEntry, type LocalEntry } from './scan';

/**
 * Makes the folders a pull brings down. Their watcher events are this client's own (the watch.ts
 * `placing` hook), and each is described as a scan would read it, so the pass takes them into its
 * scan instead of reading DIR again (engine.ts, `runPass`).
 */
export class FolderMaker {
  /** The folders made, as a scan reads them. */
  readonly made: LocalEntry[] = [];
  /** Folders made and recorded in the journal. */
  count = 0;
  private mkdirs = 0;

  constructor(
    private readonly ctx: SyncContext,
    private readonly live: LiveTree,
  ) {}

  /** Whether every folder made has its entry: one whose stat could not be read leaves only a new scan to say what is there. */
  get allSeen(): boolean {
    return this.made.length === this.mkdirs;
  }

  async make(rn: RemoteNode, target: string): Promise<void> {
    const unplace = this.ctx.placing?.(target, 'folder');
    try {
      await fs.mkdir(target);
    } catch (err) {
      unplace?.();
      throw err;
    }
    this.mkdirs++;
    const seenAt = Date.now();
    const st = await statOf(target);
    this.live.set(rn.id, rn.parentId, rn.name, 'folder');
    this.ctx.journal.putBase(toBase(rn, st));
    const path = joinPath(this.live.path(rn.parentId)!, rn.name);
    const parentDisk = this.live.disk(rn.parentId);
    if (st && parentDisk !== undefined) this.made.push(placedEntry(path, joinPath(parentDisk, rn.name), 'folder', st, seenAt));
    this.count++;
    this.ctx.reporter.line(`created ${path}/`);
  }
}
