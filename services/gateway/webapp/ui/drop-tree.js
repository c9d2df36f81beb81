// Where a dropped tree goes. A dropped folder reuses an existing folder of its name at any depth (as
// at the top of the drop), others are created; a file whose name is already taken where it lands, or
// everything under a folder whose name is taken by a file, is reported file by file in words, and
// the rest of the drop goes on.
import { api, newId } from './api.js';

const PAGE = 1000;

/** An existing folder's children by name (the service keeps names in NFC). @param {string} folderId */
async function childrenOf(folderId) {
  /** @type {Map<string, { id: string, type: string }>} */
  const byName = new Map();
  for (let offset = 0; ; offset += PAGE) {
    const page = await api.get(`/v1/items?limit=${PAGE}&offset=${offset}${folderId ? `&folderId=${folderId}` : ''}`);
    for (const item of page.items) byName.set(item.name, { id: item.id, type: item.type });
    if (page.items.length === 0 || offset + page.items.length >= page.total) return byName;
  }
}

/** @param {string} path */
const where = (path) => (path ? `the folder “${path}”` : 'this folder');

/**
 * @param {Array<{ file: File, dirs: string[] }>} entries @param {string} folderId
 * @returns {Promise<{ ops: Array<{ type: string, resourceId: string, payload: unknown }>, files: Array<{ file: File, folderId: string }>, refused: Array<{ file: File, reason: string }> }>}
 */
export async function planDrop(entries, folderId) {
  /** Folder ids by path within the drop ('' is where it landed). @type {Map<string, string>} */
  const ids = new Map([['', folderId]]);
  /** The children of folders that existed before the drop, by path; a new folder has none. @type {Map<string, Promise<Map<string, { id: string, type: string }>>>} */
  const existing = new Map([['', childrenOf(folderId)]]);
  /** Why the files under a path cannot go there. @type {Map<string, string>} */
  const blocked = new Map();
  /** @type {Array<{ type: string, resourceId: string, payload: unknown }>} */
  const ops = [];
  for (const { dirs } of entries) {
    let path = '';
    for (const raw of dirs) {
      const dir = raw.normalize('NFC');
      const parentPath = path;
      path = path ? `${path}/${dir}` : dir;
      if (ids.has(path) || blocked.has(path)) continue;
      const parentBlocked = blocked.get(parentPath);
      if (parentBlocked) {
        blocked.set(path, parentBlocked);
        continue;
      }
      const there = (await existing.get(parentPath))?.get(dir);
      if (there?.type === 'folder') {
        ids.set(path, there.id);
        existing.set(path, childrenOf(there.id));
      } else if (there) {
        blocked.set(path, `${where(parentPath)} already has a file named “${dir}”, so the folder “${dir}” could not be made there`);
      } else {
        const id = newId();
        ids.set(path, id);
        ops.push({ type: 'create', resourceId: id, payload: { resourceType: 'folder', name: dir, parentId: ids.get(parentPath) || null } });
      }
    }
  }
  const files = [];
  const refused = [];
  for (const { file, dirs } of entries) {
    const path = dirs.map((d) => d.normalize('NFC')).join('/');
    const reason = blocked.get(path);
    const taken = reason ? undefined : (await existing.get(path))?.get(file.name.normalize('NFC'));
    if (reason) refused.push({ file, reason: `Not uploaded: ${reason}.` });
    else if (taken) refused.push({ file, reason: `Not uploaded: ${where(path)} already has a ${taken.type} named “${file.name}”. Rename one of them, then upload it again.` });
    else files.push({ file, folderId: ids.get(path) ?? folderId });
  }
  return { ops, files, refused };
}
