import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { statOf } from './context';
import { STATE_DIR, type BaseNode } from './journal';
import { assertSafeId, isSafeId } from './local.names';
import { pathIn } from './match';
import { freeConflictedName, parentOf } from './scan';

/**
 * Where a node waits, named by its resource id, while the server's renames swap its name with
 * another's (a → b and b → a in one pass): it leaves its name first, then is renamed into place.
 * It is inside the state folder, so a node left here by a kill is put back before the next scan.
 */
export const PARKING = `${STATE_DIR}/parked`;

export async function park(dir: string, fromDisk: string, id: string): Promise<void> {
  assertSafeId(id);
  await fs.mkdir(join(dir, PARKING), { recursive: true, mode: 0o700 });
  await fs.rename(join(dir, fromDisk), join(dir, PARKING, id));
}

/**
 * Puts back every parked node: at the place given (where it was taken from in this pass), else at
 * its place in the journal's base, else beside it as a conflicted copy. Nothing parked is ever lost.
 */
export async function unparkAll(dir: string, base: Map<string, BaseNode>, device: string, places = new Map<string, string>()): Promise<string[]> {
  const names = await fs.readdir(join(dir, PARKING)).catch(() => [] as string[]);
  const restored: string[] = [];
  for (const id of names) {
    // Only what `park` put there: a node named by an id.
    if (!isSafeId(id)) continue;
    const wanted = await spelledOnDisk(dir, places.get(id) ?? pathIn(base, id) ?? id);
    let to = wanted;
    if ((await statOf(join(dir, parentOf(to)))) === undefined) to = wanted.slice(wanted.lastIndexOf('/') + 1);
    if ((await statOf(join(dir, to))) !== undefined) {
      const parent = parentOf(to);
      const copy = await freeConflictedName(join(dir, parent), to.slice(to.lastIndexOf('/') + 1), device);
      to = parent ? `${parent}/${copy}` : copy;
    }
    await fs.rename(join(dir, PARKING, id), join(dir, to));
    restored.push(to);
  }
  return restored;
}

/**
 * A path (the journal's NFC form) as the disk spells it: each part that exists there under another
 * spelling of the same name (an NFD folder) takes that one, so that a node goes back into the folder
 * it came from and a sibling spelled otherwise counts as taking its name.
 */
async function spelledOnDisk(dir: string, path: string): Promise<string> {
  let at = '';
  for (const part of path.split('/')) {
    const names = await fs.readdir(join(dir, at)).catch(() => [] as string[]);
    const found = names.includes(part) ? part : names.find((n) => n.normalize('NFC') === part.normalize('NFC'));
    at = at ? `${at}/${found ?? part}` : found ?? part;
  }
  return at;
}
