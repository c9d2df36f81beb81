import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';

/** The marker file, at the top of the folder, where fsck never looks for content. */
export const MARKER_FILE = '.filesync-store';

/** The id the marker of the store at `root` holds; undefined when it has none. */
export async function readMarker(root: string): Promise<string | undefined> {
  try {
    return (await fs.readFile(path.join(root, MARKER_FILE), 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Writes the marker with `storeId` unless one is there: written whole under a temporary name, then
 * linked to the marker's name. A link never replaces a file, so of two processes claiming at once
 * one wins and the other reads the winner's id.
 */
export async function claimMarker(root: string, storeId: string): Promise<string> {
  await fs.mkdir(root, { recursive: true });
  const temporary = path.join(root, `${MARKER_FILE}.${randomBytes(6).toString('hex')}.tmp`);
  await fs.writeFile(temporary, `${storeId}\n`, { flag: 'wx' });
  try {
    await fs.link(temporary, path.join(root, MARKER_FILE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await fs.rm(temporary, { force: true });
  }
  return (await readMarker(root)) as string;
}
