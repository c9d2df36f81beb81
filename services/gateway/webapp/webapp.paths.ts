import { existsSync } from 'node:fs';
import path from 'node:path';

/** The repository (or image) root: the nearest folder above this file holding package.json. */
export function projectRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}

/** Where `npm run build` writes the web app's bundles, and the gateway serves them from. */
export const webAppOutDir = (root = projectRoot()) => path.join(root, 'dist', 'webapp');

/** The browser sources (plain ES modules). */
export const webAppSourceDir = (root = projectRoot()) => path.join(root, 'services', 'gateway', 'webapp', 'ui');
