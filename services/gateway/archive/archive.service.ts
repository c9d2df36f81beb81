import type { ContentCrcRepository } from '../../../shared/content/content-crc.repository';
import { invalid, notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import { segment, walkFolder, type ArchiveEntry, type ArchiveTree } from './zip.writer';

/** Items one archive may name: their ids fit a request line well under Node's 16 KiB header limit. */
export const MAX_ARCHIVE_ITEMS = 200;

export interface ArchiveSelection {
  /** The archive's file name: the item's own name for one folder, `files.zip` otherwise. */
  fileName: string;
  entries: AsyncIterable<ArchiveEntry>;
}

/** `ids` as the query gives it: comma-separated resource ids, 1 to MAX_ARCHIVE_ITEMS of them. */
export function parseArchiveIds(raw: string | undefined): string[] {
  const ids = [...new Set((raw ?? '').split(',').filter((id) => id !== ''))];
  if (ids.length === 0 || ids.length > MAX_ARCHIVE_ITEMS) throw invalid(`ids must name 1 to ${MAX_ARCHIVE_ITEMS} files or folders, separated by commas`, { field: 'ids' });
  return ids;
}

/**
 * A name not yet taken at the archive's top level: two selected items of one name (from different
 * folders) become `report.pdf` and `report (2).pdf` rather than two entries of one path.
 */
function uniqueName(name: string, isFile: boolean, taken: Set<string>): string {
  if (!taken.has(name)) return name;
  const dot = isFile ? name.lastIndexOf('.') : -1;
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  for (let n = 2; ; n++) {
    const candidate = `${stem} (${n})${ext}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/**
 * The owner's archive of any of their files and folders (GET /v1/archive): files at the top under
 * their names, each folder's files under `name/...`, paths relative to the selection.
 */
export class ArchiveService {
  constructor(
    private readonly resources: ResourceRepository,
    private readonly tree: ArchiveTree,
    private readonly crcs: ContentCrcRepository,
  ) {}

  /** Every id must be an active file or folder of the caller; otherwise 404 and nothing is sent. */
  async select(userId: string, ids: string[]): Promise<ArchiveSelection> {
    const items: ResourceRecord[] = [];
    for (const id of ids) {
      const item = isId(id) ? await this.resources.findActive(userId, id) : undefined;
      if (!item) throw notFound(`no such file or folder: ${id}`);
      items.push(item);
    }
    const only = items.length === 1 && items[0]!.type === 'folder' ? items[0]!.name : undefined;
    return { fileName: `${only ?? 'files'}.zip`, entries: this.entries(userId, items) };
  }

  private async *entries(userId: string, items: ResourceRecord[]): AsyncGenerator<ArchiveEntry> {
    const taken = new Set<string>();
    const named = items.map((item) => {
      const name = uniqueName(segment(item.name), item.type === 'file', taken);
      taken.add(name);
      return { item, name };
    });
    // Files first, as a folder's own files come before its subfolders.
    const crcs = await this.crcs.find(named.flatMap(({ item }) => (item.type === 'file' && item.contentSha256 ? [item.contentSha256] : [])));
    for (const { item, name } of named) {
      if (item.type !== 'file' || !item.storageKey) continue;
      const crc32 = item.contentSha256 ? crcs.get(item.contentSha256) : undefined;
      yield { path: name, sizeBytes: item.sizeBytes, storageKey: item.storageKey, updatedAt: item.updatedAt, crc32 };
    }
    for (const { item, name } of named) {
      if (item.type === 'folder') yield* walkFolder(this.tree, userId, item.id, `${name}/`);
    }
  }
}
