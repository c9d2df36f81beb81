import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { Seeder } from './seeder';

export { COMMON_TERM, RARE_MATCHES, RARE_TERM } from './seeder';

export interface ReadDataset {
  files: number;
  user: BenchUser;
  /** Active resources of the user (files and folders), for the snapshot. */
  active: number;
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
  const rows = await new Seeder(stack.db, log).seedUsers([
    { userId: user!.userId, files },
    ...noise.map((other) => ({ userId: other.userId, files: Math.round(files / noise.length), tag: `n${files}-` })),
  ]);
  await stack.db.raw('ANALYZE TABLE resources, search_grams');
  log(`data: ${rows} rows for the ${files}-file user and 4 other users loaded in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return { files, user: user!, active: files + Math.ceil(files / 100) };
}
