import { createHash, randomBytes } from 'node:crypto';
import { prng } from '../bench/ops.generator';
import type { Api } from './client';

export { prng };

export interface Entry {
  type: 'file' | 'folder';
  name: string;
  parentId: string | null;
  rev: number;
  /** Files: the digest the feed announced, and the bytes downloaded for it. */
  sha256?: string;
  content?: Buffer;
}

interface Op {
  opId: number;
  type: 'create' | 'update' | 'move' | 'delete';
  resourceId: string;
  payload?: Record<string, unknown>;
  /** The rev the device last saw (update, move, delete): the op applies only while it holds. */
  baseRev?: number;
}

interface FeedItem {
  id: string;
  type: 'file' | 'folder';
  name: string;
  parentId: string;
  deleted: boolean;
  rev: number;
  deviceId: string;
  sha256?: string;
}

/** What a device's pulls cost it. */
export interface FeedCost {
  /** Feed items the device applied to its replica. */
  applied: number;
  /** Its own changes, recognised by deviceId and a rev it already held, skipped at no cost. */
  skippedOwn: number;
  /** Own items applied because another device changed the resource between the device's base and its change. */
  ownWithOthers: number;
  /** Own items applied for no such reason: the device paid for its own change. Must stay 0. */
  wastedOwn: number;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const NAMES = ['a', 'b', 'c', 'notes', 'docs', 'x.txt', 'y.txt', 'z.bin'];

/**
 * One simulated device: a replica built only from the change feed and its own results (what it
 * knows the server holds), an outbox of changes made offline, and content waiting to be sent. It
 * behaves as docs/SYNC-CLIENT.md tells a client to: pull, push the outbox with baseRev, take each
 * result's rev as held when it is exactly one above the rev the op started from, send content with
 * preconditions, pull again, skipping its own changes.
 */
export class Device {
  readonly synced = new Map<string, Entry>();
  readonly cost: FeedCost = { applied: 0, skippedOwn: 0, ownWithOthers: 0, wastedOwn: 0 };
  /** Resources whose latest result the replica could not take as held (another change came between). */
  private readonly unheld = new Set<string>();
  private outbox: Op[] = [];
  private contentToSend = new Map<string, { bytes: Buffer; ifMatch?: string }>();
  private cursor: string | undefined;
  private nextOpId = 1;
  /** What the device believes while offline: the synced state plus its own pending changes. */
  private view = new Map<string, Entry>();

  constructor(
    readonly label: string,
    private readonly api: Api,
    private readonly random: () => number,
    /** This device's id: feed items carrying it are its own changes. */
    private readonly deviceId: string,
  ) {}

  private pick<T>(items: T[]): T | undefined {
    return items.length === 0 ? undefined : items[Math.floor(this.random() * items.length)];
  }

  private newId(): string {
    return Array.from({ length: 32 }, () => Math.floor(this.random() * 16).toString(16)).join('');
  }

  private isInside(id: string, folderId: string | null): boolean {
    for (let at = folderId; at !== null; at = this.view.get(at)?.parentId ?? null) if (at === id) return true;
    return false;
  }

  /** Makes `count` random changes offline: creates, renames, moves, deletes and new content. */
  changeOffline(count: number): void {
    this.view = new Map([...this.synced].map(([id, e]) => [id, { ...e }]));
    for (let i = 0; i < count; i++) {
      const ids = [...this.view.keys()];
      const folders = ids.filter((id) => this.view.get(id)!.type === 'folder');
      const files = ids.filter((id) => this.view.get(id)!.type === 'file');
      const name = this.pick(NAMES)!;
      const roll = this.random();
      if (roll < 0.35 || ids.length === 0) {
        const id = this.newId();
        const type = this.random() < 0.4 ? 'folder' : 'file';
        const parentId = this.random() < 0.5 ? null : (this.pick(folders) ?? null);
        this.outbox.push({ opId: this.nextOpId++, type: 'create', resourceId: id, payload: { resourceType: type, name, parentId } });
        this.view.set(id, { type, name, parentId, rev: 1 });
        if (type === 'file') this.contentToSend.set(id, { bytes: randomBytes(1 + Math.floor(this.random() * 3000)) });
      } else if (roll < 0.5) {
        const id = this.pick(ids)!;
        const entry = this.view.get(id)!;
        this.outbox.push({ opId: this.nextOpId++, type: 'update', resourceId: id, payload: { name }, baseRev: entry.rev++ });
        entry.name = name;
      } else if (roll < 0.65) {
        const id = this.pick(ids)!;
        const target = this.random() < 0.3 ? null : (this.pick(folders) ?? null);
        if (this.isInside(id, target)) continue;
        const entry = this.view.get(id)!;
        this.outbox.push({ opId: this.nextOpId++, type: 'move', resourceId: id, payload: { parentId: target }, baseRev: entry.rev++ });
        entry.parentId = target;
      } else if (roll < 0.75) {
        const id = this.pick(ids)!;
        this.outbox.push({ opId: this.nextOpId++, type: 'delete', resourceId: id, baseRev: this.view.get(id)!.rev });
        const gone = ids.filter((other) => this.isInside(id, other));
        for (const other of gone) this.view.delete(other);
      } else if (files.length > 0) {
        const id = this.pick(files)!;
        const known = this.synced.get(id)?.sha256;
        this.contentToSend.set(id, { bytes: randomBytes(1 + Math.floor(this.random() * 3000)), ...(known ? { ifMatch: known } : {}) });
      }
    }
  }

  /** Pulls, pushes the outbox and the content, and pulls again. */
  async sync(): Promise<void> {
    await this.pull();
    await this.push();
    await this.sendContent();
    await this.pull();
  }

  async pull(): Promise<void> {
    for (;;) {
      const res = await this.api.get(`/v1/sync/changes?limit=50${this.cursor ? `&cursor=${this.cursor}` : ''}`);
      if (res.status !== 200) throw new Error(`${this.label}: feed answered ${res.status} ${res.text}`);
      for (const item of res.body.items) await this.apply(item);
      this.cursor = res.body.cursor;
      if (!res.body.hasMore) return;
    }
  }

  private async apply(item: FeedItem) {
    const known = this.synced.get(item.id);
    if (item.deviceId === this.deviceId && (known ? known.rev >= item.rev : item.deleted)) {
      this.cost.skippedOwn++;
      return;
    }
    this.cost.applied++;
    if (item.deviceId === this.deviceId) {
      // An own deletion of a resource the replica still holds: it was not under what the device
      // deleted as far as the device knew, so another device moved it there in between.
      if (this.unheld.has(item.id) || item.deleted) this.cost.ownWithOthers++;
      else this.cost.wastedOwn++;
    }
    if (item.deleted) {
      this.synced.delete(item.id);
      return;
    }
    const entry: Entry = { type: item.type, name: item.name, parentId: item.parentId || null, rev: item.rev, ...(item.sha256 ? { sha256: item.sha256 } : {}) };
    if (known?.content && known.sha256 === item.sha256) entry.content = known.content;
    if (item.sha256 && !entry.content) {
      const res = await fetch(`${this.api.baseUrl}/v1/files/${item.id}/content`, { headers: { authorization: `Bearer ${this.api.token}` } });
      // Deleted or replaced since this page was read: a later item says so.
      if (res.status === 200) entry.content = Buffer.from(await res.arrayBuffer());
    }
    this.synced.set(item.id, entry);
  }

  private async push(): Promise<void> {
    while (this.outbox.length > 0) {
      const batch = this.outbox.slice(0, 1 + Math.floor(this.random() * 10));
      const res = await this.api.post('/v1/sync/ops', { ops: batch });
      if (res.status === 503) continue;
      if (res.status !== 200) throw new Error(`${this.label}: sync answered ${res.status} ${res.text}`);
      const applied = res.body.applied as Array<{ outcome: string; rev: number | null }>;
      applied.forEach((result, i) => this.holdResult(batch[i]!, result.rev));
      this.outbox.splice(0, applied.length);
      const failed = res.body.failed as { error: { code: string } } | null;
      if (!failed) continue;
      const op = this.outbox.shift()!;
      // A create that clashes is retried under a name of its own; anything else the feed will settle,
      // and the later ops on that resource, whose baseRev counted on this one, go with it.
      if (op.type === 'create' && failed.error.code === 'NAME_CONFLICT') {
        this.outbox.unshift({ ...op, opId: this.nextOpId++, payload: { ...op.payload, name: `${op.payload!.name as string} (${this.label})` } });
        continue;
      }
      this.outbox = this.outbox.filter((later) => later.resourceId !== op.resourceId);
      if (op.type === 'create') this.contentToSend.delete(op.resourceId);
    }
  }

  /**
   * An op's result: when its rev is exactly one above the rev the op started from (baseRev, 0 for a
   * create), nobody else changed the resource in between, so the replica now holds that rev and the
   * feed item of this change will be skipped. Otherwise the feed brings the resource's state.
   */
  private holdResult(op: Op, rev: number | null): void {
    if (rev === null) return;
    if (rev !== (op.type === 'create' ? 0 : (op.baseRev ?? -1)) + 1) {
      this.unheld.add(op.resourceId);
      return;
    }
    this.unheld.delete(op.resourceId);
    const known = this.synced.get(op.resourceId);
    switch (op.type) {
      case 'create': {
        const p = op.payload as { resourceType: 'file' | 'folder'; name: string; parentId: string | null };
        this.synced.set(op.resourceId, { type: p.resourceType, name: p.name, parentId: p.parentId, rev });
        return;
      }
      case 'update':
        if (known) Object.assign(known, { name: op.payload!.name as string, rev });
        return;
      case 'move':
        if (known) Object.assign(known, { parentId: op.payload!.parentId as string | null, rev });
        return;
      case 'delete': {
        // The resource and everything under it, found before any of it is removed.
        const inside = (id: string) => {
          for (let at: string | null = id; at !== null; at = this.synced.get(at)?.parentId ?? null) if (at === op.resourceId) return true;
          return false;
        };
        for (const id of [...this.synced.keys()].filter(inside)) this.synced.delete(id);
      }
    }
  }

  private async sendContent(): Promise<void> {
    for (const [id, { bytes, ifMatch }] of this.contentToSend) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${this.api.token}`,
        'content-type': 'application/octet-stream',
        'repr-digest': `sha-256=:${createHash('sha256').update(bytes).digest('base64')}:`,
        ...(ifMatch ? { 'if-match': `"${ifMatch}"` } : { 'if-none-match': '*' }),
      };
      const res = await fetch(`${this.api.baseUrl}/v1/files/${id}/content`, { method: 'PUT', headers, body: bytes });
      // 412: another device wrote first; 404: deleted meanwhile. The feed brings the winner.
      if (![200, 404, 412].includes(res.status)) throw new Error(`${this.label}: PUT answered ${res.status} ${await res.text()}`);
      if (res.status !== 200) continue;
      const stored = (await res.json()) as { sha256?: string; rev: number };
      if (stored.sha256 !== sha(bytes)) throw new Error(`${this.label}: PUT stored other bytes`);
      // As for an op: the replica holds the new rev only when nothing else changed the file meanwhile.
      const known = this.synced.get(id);
      if (known && stored.rev === known.rev + 1) {
        Object.assign(known, { rev: stored.rev, sha256: stored.sha256, content: bytes });
        this.unheld.delete(id);
      } else {
        this.unheld.add(id);
      }
    }
    this.contentToSend.clear();
  }

  /** The replica as comparable data: id -> type, name, parent, digest of the bytes held. */
  snapshot(): Record<string, { type: string; name: string; parentId: string | null; sha256: string | null }> {
    return Object.fromEntries(
      [...this.synced].map(([id, e]) => [id, { type: e.type, name: e.name, parentId: e.parentId, sha256: e.content ? sha(e.content) : null }]),
    );
  }
}
