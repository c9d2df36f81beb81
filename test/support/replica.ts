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
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const NAMES = ['a', 'b', 'c', 'notes', 'docs', 'x.txt', 'y.txt', 'z.bin'];

/**
 * One simulated device: a replica built only from the change feed (what it knows the server holds),
 * an outbox of changes made offline, and content waiting to be sent. It behaves as docs/SYNC-CLIENT.md
 * tells a client to: pull, push the outbox, send content with preconditions, pull again.
 */
export class Device {
  readonly synced = new Map<string, Entry>();
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
        this.view.set(id, { type, name, parentId, rev: 0 });
        if (type === 'file') this.contentToSend.set(id, { bytes: randomBytes(1 + Math.floor(this.random() * 3000)) });
      } else if (roll < 0.5) {
        const id = this.pick(ids)!;
        this.outbox.push({ opId: this.nextOpId++, type: 'update', resourceId: id, payload: { name } });
        this.view.get(id)!.name = name;
      } else if (roll < 0.65) {
        const id = this.pick(ids)!;
        const target = this.random() < 0.3 ? null : (this.pick(folders) ?? null);
        if (this.isInside(id, target)) continue;
        this.outbox.push({ opId: this.nextOpId++, type: 'move', resourceId: id, payload: { parentId: target } });
        this.view.get(id)!.parentId = target;
      } else if (roll < 0.75) {
        const id = this.pick(ids)!;
        this.outbox.push({ opId: this.nextOpId++, type: 'delete', resourceId: id });
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

  private async apply(item: { id: string; type: 'file' | 'folder'; name: string; parentId: string; deleted: boolean; rev: number; sha256?: string }) {
    if (item.deleted) {
      this.synced.delete(item.id);
      return;
    }
    const known = this.synced.get(item.id);
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
      const done = res.body.applied.length;
      this.outbox.splice(0, done);
      const failed = res.body.failed as { error: { code: string } } | null;
      if (!failed) continue;
      const op = this.outbox.shift()!;
      // A create that clashes is retried under a name of its own; anything else the feed will settle.
      if (op.type === 'create' && failed.error.code === 'NAME_CONFLICT') {
        this.outbox.unshift({ ...op, opId: this.nextOpId++, payload: { ...op.payload, name: `${op.payload!.name as string} (${this.label})` } });
      } else if (op.type === 'create') {
        this.contentToSend.delete(op.resourceId);
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
      if (res.status === 200 && ((await res.json()) as { sha256?: string }).sha256 !== sha(bytes)) throw new Error(`${this.label}: PUT stored other bytes`);
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
