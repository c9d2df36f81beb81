import { promises as fs } from 'node:fs';
import path from 'node:path';

/**
 * Where a storage key's bytes are. Keys are written by the service (`<deviceId>/<id>[.<ext>]`), never
 * taken from a client, but a key that would leave the upload directory is refused all the same.
 */
export function contentPath(uploadDir: string, storageKey: string): string {
  const root = path.resolve(uploadDir);
  const full = path.resolve(root, storageKey);
  if (!full.startsWith(root + path.sep)) throw new Error(`storage key outside the upload directory: ${storageKey}`);
  return full;
}

/**
 * Removes content files whose resources no longer point at them (after the commit that detached them).
 * A file already gone is fine; any other failure is reported, not thrown: the rows are committed, and
 * what is left on disk is an orphan that `npm run fsck --repair` removes.
 */
export async function removeContent(uploadDir: string, storageKeys: (string | null)[]): Promise<{ removed: number; failed: string[] }> {
  let removed = 0;
  const failed: string[] = [];
  for (const key of storageKeys) {
    if (!key) continue;
    try {
      await fs.rm(contentPath(uploadDir, key), { force: true });
      removed++;
    } catch {
      failed.push(key);
    }
  }
  return { removed, failed };
}
