import { randomBytes } from 'node:crypto';
import type { Db } from '../../shared/db/knex';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { prng } from './ops.generator';

/** Twenty words, each in about 5% of the names; capitalised, so a lowercase search exercises case folding. */
const WORDS = ['Budget', 'Invoice', 'Holiday', 'Report', 'Contract', 'Draft', 'Photo', 'Scan', 'Notes', 'Slides',
  'Receipt', 'Backup', 'Letter', 'Summary', 'Plan', 'Agenda', 'Minutes', 'Design', 'Manual', 'Sheet'];
const EXTS = ['pdf', 'txt', 'jpg', 'docx', 'xlsx', 'png', 'md', 'zip'];
const MIMES: Record<string, string> = {
  pdf: 'application/pdf', txt: 'text/plain', jpg: 'image/jpeg', png: 'image/png', md: 'text/markdown', zip: 'application/zip',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};
/** The rare search term: exactly RARE_MATCHES files of each user carry it. */
export const COMMON_TERM = 'budget';
export const RARE_TERM = 'zebra';
export const RARE_MATCHES = 10;

const DAY = 24 * 3600 * 1000;
const INSERT_CHUNK = 2000;

export interface ReadDataset {
  files: number;
  user: BenchUser;
  /** Active resources of the user (files and folders), for the snapshot. */
  active: number;
}

const newId = () => randomBytes(16).toString('hex');

/**
 * Rows for one user: `files` active files at the root, 5% more soft-deleted ones, one folder per
 * hundred files. Timestamps spread over the last year, so every sort has real work to do.
 */
export function* rowsFor(userId: string, files: number, seed: number, tag = ''): Generator<Record<string, unknown>> {
  const random = prng(seed);
  const end = Date.now() - 3600_000;
  const stamp = () => {
    const created = end - Math.floor(random() * 365 * DAY);
    const updated = Math.min(end, created + Math.floor(random() * 30 * DAY));
    return { created_at: new Date(created), updated_at: new Date(updated) };
  };
  const deleted = Math.round(files * 0.05);
  for (let i = 0; i < files + deleted; i++) {
    const word = i < RARE_MATCHES ? `Quarterly-${RARE_TERM[0]!.toUpperCase()}${RARE_TERM.slice(1)}` : WORDS[Math.floor(random() * WORDS.length)]!;
    const ext = EXTS[i % EXTS.length]!;
    const t = stamp();
    yield {
      id: newId(),
      user_id: userId,
      parent_id: null,
      type: 'file',
      name: `${word}-${tag}${i.toString().padStart(7, '0')}.${ext}`,
      size_bytes: Math.floor(random() * 50_000_000),
      mime_type: MIMES[ext],
      extension: ext,
      storage_key: null,
      content_sha256: null,
      ...t,
      deleted_at: i >= files ? t.updated_at : null,
    };
  }
  for (let i = 0; i < Math.ceil(files / 100); i++) {
    yield {
      id: newId(),
      user_id: userId,
      parent_id: null,
      type: 'folder',
      name: `Folder-${tag}${i.toString().padStart(5, '0')}`,
      size_bytes: 0,
      mime_type: null,
      extension: null,
      storage_key: null,
      content_sha256: null,
      ...stamp(),
      deleted_at: null,
    };
  }
}

/** Bulk INSERT, straight into the table (generated columns parent_key, name_key, alive left to MySQL). */
export async function bulkInsert(db: Db, rows: Iterable<Record<string, unknown>>): Promise<number> {
  let chunk: Record<string, unknown>[] = [];
  let n = 0;
  for (const row of rows) {
    chunk.push(row);
    if (chunk.length === INSERT_CHUNK) {
      await db('resources').insert(chunk);
      n += chunk.length;
      chunk = [];
    }
  }
  if (chunk.length > 0) await db('resources').insert(chunk);
  return n + chunk.length;
}

const loaded = new Map<number, Promise<ReadDataset>>();
let noiseUsers: Promise<BenchUser[]> | undefined;

/**
 * The data the reads and the snapshot run on, loaded once per size: one user with `files` files,
 * and as many rows again spread over four other users, so every query has to skip other people's rows.
 */
export function readDataset(ctx: BenchContext, files: number): Promise<ReadDataset> {
  let p = loaded.get(files);
  if (!p) {
    p = load(ctx, files);
    loaded.set(files, p);
  }
  return p;
}

async function load(ctx: BenchContext, files: number): Promise<ReadDataset> {
  const { stack, client, adminToken, log } = ctx;
  noiseUsers ??= provisionUsers(client, adminToken, ['noise-0', 'noise-1', 'noise-2', 'noise-3']);
  const noise = await noiseUsers;
  const [user] = await provisionUsers(client, adminToken, [`reads-${files}`]);
  const t = Date.now();
  let rows = await bulkInsert(stack.db, rowsFor(user!.userId, files, files));
  for (const [i, other] of noise.entries()) rows += await bulkInsert(stack.db, rowsFor(other.userId, Math.round(files / noise.length), files * 10 + i, `n${files}-`));
  await stack.db.raw('ANALYZE TABLE resources');
  log(`data: ${rows} rows for the ${files}-file user and 4 other users loaded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return { files, user: user!, active: files + Math.ceil(files / 100) };
}
