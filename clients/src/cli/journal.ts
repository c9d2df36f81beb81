import Database from 'better-sqlite3';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { packChunks, unpackChunks, type ContentChunk } from '../../../shared/protocol/chunking';

/** The state folder inside the synced folder; it is never synced. */
export const STATE_DIR = '.filesync';
export const IGNORE_FILE = '.filesyncignore';

/** What the service holds of one resource, as the change feed last said (deleted ones are removed). */
export interface RemoteNode {
  id: string;
  parentId: string;
  name: string;
  type: 'file' | 'folder';
  rev: number;
  sha256: string;
  size: number;
}

/** The merge base: the state of one resource both sides last agreed on, with its local identity. */
export interface BaseNode extends RemoteNode {
  mtimeMs: number;
  ino: number;
  /** The mtime was read within one mtime tick of itself (see `scan.ts`): it does not vouch for the bytes. */
  racy?: boolean;
}

/** A resumable upload in flight: the resource it creates or replaces, the bytes (their digest, or the
 * size and mtime of a new file), its tus address. */
export interface PendingUpload {
  id: string;
  path: string;
  sha256: string;
  url: string;
}

/**
 * The client's journal: one SQLite file in WAL mode under `DIR/.filesync/`, written in small
 * transactions so that a kill at any moment leaves a consistent merge base behind.
 */
export class Journal {
  readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  /**
   * The base and remote tables as last read or written through this journal, which alone writes them:
   * a pass reads them whole several times, and re-reading thousands of rows each time cost more than
   * the pass's own work. Dropped whenever a transaction rolls back; the tables stay the source of truth.
   */
  private baseRows?: Map<string, BaseNode>;
  private remoteRows?: Map<string, RemoteNode>;

  constructor(dir: string) {
    const stateDir = join(dir, STATE_DIR);
    mkdirSync(join(stateDir, 'tmp'), { recursive: true, mode: 0o700 });
    const file = join(stateDir, 'journal.db');
    this.db = new Database(file);
    chmodSync(file, 0o600);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS remote (id TEXT PRIMARY KEY, parent_id TEXT NOT NULL, name TEXT NOT NULL,
        type TEXT NOT NULL, rev INTEGER NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS base (id TEXT PRIMARY KEY, parent_id TEXT NOT NULL, name TEXT NOT NULL,
        type TEXT NOT NULL, rev INTEGER NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,
        mtime_ms REAL NOT NULL, ino INTEGER NOT NULL, racy INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS outbox (op_id TEXT PRIMARY KEY, op TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS uploads (id TEXT PRIMARY KEY, path TEXT NOT NULL, sha256 TEXT NOT NULL, url TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS conflicts (path TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS chunk_lists (sha256 TEXT PRIMARY KEY, chunks BLOB NOT NULL);
    `);
    // A journal made without the `racy` column gets it; its rows count as read in good time.
    const columns = this.stmt('PRAGMA table_info(base)').all() as { name: string }[];
    if (!columns.some((c) => c.name === 'racy')) this.db.exec('ALTER TABLE base ADD COLUMN racy INTEGER NOT NULL DEFAULT 0');
    for (const f of ['journal.db-wal', 'journal.db-shm']) {
      try {
        chmodSync(join(stateDir, f), 0o600);
      } catch {
        /* not there yet */
      }
    }
  }

  close(): void {
    this.db.close();
  }

  /** Each statement prepared once: a pass makes the same few reads and writes thousands of times. */
  private stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  get(key: string): string | undefined {
    return (this.stmt('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
  }

  set(key: string, value: string | undefined): void {
    if (value === undefined) this.stmt('DELETE FROM meta WHERE key = ?').run(key);
    else this.stmt('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  tx<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn)();
    } catch (err) {
      this.baseRows = undefined;
      this.remoteRows = undefined;
      throw err;
    }
  }

  /** A copy the caller may change: the nodes as the journal holds them now. */
  remote(): Map<string, RemoteNode> {
    if (!this.remoteRows) {
      const rows = this.stmt('SELECT id, parent_id AS parentId, name, type, rev, sha256, size FROM remote').all() as RemoteNode[];
      this.remoteRows = new Map(rows.map((r) => [r.id, r]));
    }
    const copy = new Map<string, RemoteNode>();
    for (const [id, r] of this.remoteRows) copy.set(id, { ...r });
    return copy;
  }

  putRemote(n: RemoteNode): void {
    this.stmt(
        `INSERT INTO remote (id, parent_id, name, type, rev, sha256, size) VALUES (@id, @parentId, @name, @type, @rev, @sha256, @size)
         ON CONFLICT(id) DO UPDATE SET parent_id = excluded.parent_id, name = excluded.name, type = excluded.type,
         rev = excluded.rev, sha256 = excluded.sha256, size = excluded.size`,
      )
      .run(n);
    this.remoteRows?.set(n.id, { id: n.id, parentId: n.parentId, name: n.name, type: n.type, rev: n.rev, sha256: n.sha256, size: n.size });
  }

  remoteRev(id: string): number | undefined {
    if (this.remoteRows) return this.remoteRows.get(id)?.rev;
    return (this.stmt('SELECT rev FROM remote WHERE id = ?').get(id) as { rev: number } | undefined)?.rev;
  }

  dropRemote(id: string): void {
    this.stmt('DELETE FROM remote WHERE id = ?').run(id);
    this.remoteRows?.delete(id);
  }

  private baseMap(): Map<string, BaseNode> {
    if (!this.baseRows) {
      const rows = this.stmt('SELECT id, parent_id AS parentId, name, type, rev, sha256, size, mtime_ms AS mtimeMs, ino, racy FROM base')
        .all() as (Omit<BaseNode, 'racy'> & { racy: number })[];
      this.baseRows = new Map(rows.map((r) => [r.id, { ...r, racy: r.racy !== 0 }]));
    }
    return this.baseRows;
  }

  /** A copy the caller may change: the merge base as the journal holds it now. */
  base(): Map<string, BaseNode> {
    const copy = new Map<string, BaseNode>();
    for (const [id, b] of this.baseMap()) copy.set(id, { ...b });
    return copy;
  }

  /** A copy of one node of the merge base. */
  baseOf(id: string): BaseNode | undefined {
    const b = this.baseMap().get(id);
    return b && { ...b };
  }

  putBase(n: BaseNode): void {
    this.stmt(
        `INSERT INTO base (id, parent_id, name, type, rev, sha256, size, mtime_ms, ino, racy)
         VALUES (@id, @parentId, @name, @type, @rev, @sha256, @size, @mtimeMs, @ino, @racy)
         ON CONFLICT(id) DO UPDATE SET parent_id = excluded.parent_id, name = excluded.name, type = excluded.type,
         rev = excluded.rev, sha256 = excluded.sha256, size = excluded.size, mtime_ms = excluded.mtime_ms, ino = excluded.ino,
         racy = excluded.racy`,
      )
      .run({ ...n, racy: n.racy ? 1 : 0 });
    this.baseRows?.set(n.id, {
      id: n.id, parentId: n.parentId, name: n.name, type: n.type, rev: n.rev, sha256: n.sha256, size: n.size, mtimeMs: n.mtimeMs, ino: n.ino, racy: !!n.racy,
    });
  }

  /** Records many base nodes in one transaction: a bulk download's files land together. */
  putBases(nodes: BaseNode[]): void {
    if (nodes.length) this.tx(() => nodes.forEach((n) => this.putBase(n)));
  }

  dropBase(id: string): void {
    this.stmt('DELETE FROM base WHERE id = ?').run(id);
    this.baseRows?.delete(id);
  }

  outbox(): { opId: string; op: string }[] {
    return this.stmt('SELECT op_id AS opId, op FROM outbox ORDER BY rowid').all() as { opId: string; op: string }[];
  }

  putOutbox(ops: { opId: string }[]): void {
    const put = this.stmt('INSERT OR REPLACE INTO outbox (op_id, op) VALUES (?, ?)');
    this.tx(() => ops.forEach((op) => put.run(op.opId, JSON.stringify(op))));
  }

  clearOutbox(opIds: string[]): void {
    const del = this.stmt('DELETE FROM outbox WHERE op_id = ?');
    this.tx(() => opIds.forEach((id) => del.run(id)));
  }

  /** The next 64-bit operation id of this device, as a decimal string; never reused. */
  nextOpId(): string {
    return this.tx(() => {
      const last = BigInt(this.get('last_op_id') ?? String(BigInt(Date.now()) * 1000n));
      const next = (last + 1n).toString();
      this.set('last_op_id', next);
      return next;
    });
  }

  /** The upload started for these bytes: of that resource, or of a new file at that path. */
  upload(id: string, path: string, sha256: string): PendingUpload | undefined {
    return this.stmt('SELECT id, path, sha256, url FROM uploads WHERE (id = ? OR path = ?) AND sha256 = ? LIMIT 1')
      .get(id, path, sha256) as PendingUpload | undefined;
  }

  uploadOf(id: string): PendingUpload | undefined {
    return this.stmt('SELECT id, path, sha256, url FROM uploads WHERE id = ?').get(id) as PendingUpload | undefined;
  }

  putUpload(u: PendingUpload): void {
    this.stmt('INSERT OR REPLACE INTO uploads (id, path, sha256, url) VALUES (@id, @path, @sha256, @url)').run(u);
  }

  dropUpload(id: string): void {
    this.stmt('DELETE FROM uploads WHERE id = ?').run(id);
  }

  uploads(): PendingUpload[] {
    return this.stmt('SELECT id, path, sha256, url FROM uploads').all() as PendingUpload[];
  }

  uploadCount(): number {
    return (this.stmt('SELECT COUNT(*) AS n FROM uploads').get() as { n: number }).n;
  }

  addConflict(path: string): void {
    this.stmt('INSERT INTO conflicts (path, created_at) VALUES (?, ?)').run(path, new Date().toISOString());
  }

  conflicts(): { path: string; createdAt: string }[] {
    return this.stmt('SELECT path, created_at AS createdAt FROM conflicts ORDER BY rowid').all() as { path: string; createdAt: string }[];
  }

  /** The chunk list of a content this device holds or held (docs/SYNC-CLIENT.md), by its SHA-256. */
  chunkList(sha256: string): ContentChunk[] | undefined {
    const row = this.stmt('SELECT chunks FROM chunk_lists WHERE sha256 = ?').get(sha256) as { chunks: Buffer } | undefined;
    return row ? unpackChunks(row.chunks) : undefined;
  }

  /** Keeps a content's chunk list; lists of contents no longer any file's base are dropped. */
  putChunkList(sha256: string, chunks: ContentChunk[]): void {
    this.tx(() => {
      this.stmt('INSERT OR REPLACE INTO chunk_lists (sha256, chunks) VALUES (?, ?)').run(sha256, packChunks(chunks));
      this.stmt('DELETE FROM chunk_lists WHERE sha256 <> ? AND sha256 NOT IN (SELECT sha256 FROM base)').run(sha256);
    });
  }

  /** Adds what a delta transfer sent and what it saved to the totals `status` shows. */
  countDelta(sentBytes: number, savedBytes: number): void {
    this.tx(() => {
      this.set('delta_sent_bytes', String(Number(this.get('delta_sent_bytes') ?? 0) + sentBytes));
      this.set('delta_saved_bytes', String(Number(this.get('delta_saved_bytes') ?? 0) + savedBytes));
    });
  }
}
