import { promises as fs } from 'node:fs';
import { basename } from 'node:path';
import type { BaseNode, RemoteNode } from './journal';
import type { LiveTree } from './live.tree';
import { pathIn } from './match';
import { skipFailed, statOf, toBase, type SyncContext } from './context';
import { joinPath, MTIME_TICK_MS, placedEntry, type LocalEntry } from './scan';
import { batches, BULK_FILE_MAX } from './bulk.transfers';
import { ApiError } from '../sdk/errors';

/** A file the pull brings down: its server node and the full path it goes to. */
export interface Fetch {
  node: RemoteNode;
  target: string;
  /** A file replaced: what the scan found at `target`, which alone the new bytes may replace. */
  expect?: Expect;
}

/** What the local disk held at `target` when the pass scanned it; a download only replaces that. */
type Expect = { mtimeMs: number; size: number } | undefined;

/**
 * Bringing content down during the pull: downloads land in `.filesync/tmp/` and are moved into place
 * only once their SHA-256 is the announced one and nothing was written at their place meanwhile.
 */
export class RemoteFetcher {
  /** Files brought and placed by `fetchAll`. */
  actions = 0;
  /** What the disk holds now of each file placed, as a scan would read it. */
  readonly landed: LocalEntry[] = [];

  constructor(
    private readonly ctx: SyncContext,
    private readonly live: LiveTree,
    private readonly remote: Map<string, RemoteNode>,
  ) {}

  private labelOf(node: RemoteNode): string {
    const parent = this.live.path(node.parentId);
    return parent === undefined ? node.name : joinPath(parent, node.name);
  }

  /** One file's content, whole or (with `local`, the base content held at `target`) as changes. */
  async download(node: RemoteNode, target: string, expect: Expect, local?: { path: string; sha256: string }): Promise<boolean> {
    return this.place(node, target, expect, await this.ctx.transfers.download(node.id, this.labelOf(node), node.size, node.sha256, local));
  }

  /** Moves downloaded bytes into place once their SHA-256 is the announced one and nothing was written there meanwhile. */
  private async place(
    node: RemoteNode,
    target: string,
    expect: Expect,
    got: { tmp: string; sha256: string; expected: string; modeSet?: boolean },
    placed?: BaseNode[],
  ): Promise<boolean> {
    const { ctx } = this;
    const label = this.labelOf(node);
    if (got.expected !== got.sha256) {
      await fs.rm(got.tmp, { force: true });
      ctx.reporter.error(`download of ${label} did not match the SHA-256 the service announced; it will be fetched again`);
      ctx.pending++;
      return false;
    }
    // A local write since the scan wins the place: the download waits for the next pass.
    const now = await statOf(target);
    if ((now && !expect) || (now && expect && (now.mtimeMs !== expect.mtimeMs || now.size !== expect.size))) {
      await fs.rm(got.tmp, { force: true });
      return false;
    }
    // In DIR it gets the mode of any file created here (the umask's), given when it was made or now.
    if (!got.modeSet) await fs.chmod(got.tmp, 0o666 & ~process.umask());
    // Dated just out of the racy window (scan.ts): the client wrote and hashed these bytes itself, so
    // their size and mtime vouch for them at once and the next scan does not hash them again; any
    // later write dates the file anew.
    const past = new Date(Date.now() - 2 * MTIME_TICK_MS);
    await fs.utimes(got.tmp, new Date(), past);
    // Told before the rename: its event may reach the watcher before the rename's own callback.
    const unplace = ctx.placing?.(target);
    try {
      await fs.rename(got.tmp, target);
    } catch (err) {
      unplace?.();
      throw err;
    }
    const seenAt = Date.now();
    const st = await statOf(target);
    const base = toBase({ ...node, sha256: got.sha256, size: st?.size ?? node.size }, st);
    const parentDisk = this.live.disk(node.parentId);
    if (st && parentDisk !== undefined) {
      this.landed.push(placedEntry(label, joinPath(parentDisk, basename(target)), 'file', st, seenAt));
    }
    if (placed) placed.push(base);
    else ctx.journal.putBase(base);
    ctx.reporter.line(`downloaded ${label}${ctx.transfers.deltaNote(node.id)}`);
    return true;
  }

  /** A file that could not be fetched is reported and skipped unless the error ends the pass; a new one's name is free again. */
  private settle(node: RemoteNode, ok: Promise<boolean>, replacing: boolean): Promise<void> {
    return ok
      .catch((err: unknown) => {
        if (!skipFailed(this.ctx, pathIn(this.remote, node.id) ?? node.name, err)) throw err;
        return false;
      })
      .then((done) => {
        if (done) this.actions++;
        else if (!replacing) this.live.remove(node.id);
      });
  }

  /**
   * Files' content: small ones many to a response, beside the large ones one by one; a batch the
   * service does not answer whole comes one by one. Answers how many were placed.
   */
  async fetchAll(fresh: Fetch[]): Promise<number> {
    const { ctx } = this;
    const before = this.actions;
    const small = batches(fresh.filter((f) => f.node.size <= BULK_FILE_MAX), (f) => f.node.size);
    const batched = new Set(small.flat());
    fresh.splice(0, fresh.length, ...fresh.filter((f) => !batched.has(f)));
    const fetchNext = async (): Promise<void> => {
      for (let next = fresh.shift(); next && !ctx.signal.aborted; next = fresh.shift()) await this.settle(next.node, this.download(next.node, next.target, next.expect), next.expect !== undefined);
    };
    const fetchBulk = async (): Promise<void> => {
      for (let batch = small.shift(); batch && !ctx.signal.aborted; batch = small.shift()) {
        const got = await ctx.transfers.bulk.download(batch.map((f) => f.node));
        if (!got) {
          fresh.push(...batch);
          continue;
        }
        // A batch's files are recorded in one journal transaction. A kill before it leaves them placed
        // but not in the base: the next run finds each created on both sides alike and links it.
        const placed: BaseNode[] = [];
        try {
          for (const { node, target, expect } of batch) {
            const one = got.get(node.id);
            await this.settle(node, one === undefined || one instanceof ApiError ? Promise.reject(one ?? new ApiError(404, undefined)) : this.place(node, target, expect, one, placed), expect !== undefined);
          }
        } finally {
          ctx.journal.putBases(placed);
        }
      }
    };
    await Promise.all([fetchBulk(), fetchBulk(), fetchNext(), fetchNext(), fetchNext(), fetchNext()]);
    if (fresh.length) await Promise.all([fetchNext(), fetchNext(), fetchNext(), fetchNext()]);
    return this.actions - before;
  }
}
