import type { File, Folder } from '../../../shared/protocol';
import type { ResourceRecord } from './files.service';

/** What a file's view is made of: a full record, or a listed file whose times are already ISO 8601. */
export type FileViewSource = Pick<ResourceRecord, 'id' | 'name' | 'sizeBytes' | 'mimeType' | 'parentId' | 'rev' | 'contentSha256'> & {
  createdAt: Date | string;
  updatedAt: Date | string;
};

const iso = (t: Date | string) => (typeof t === 'string' ? t : t.toISOString());

export function toFileView(r: FileViewSource): File {
  const view: File = {
    id: r.id,
    name: r.name,
    size: r.sizeBytes,
    mimeType: r.mimeType ?? '',
    folderId: r.parentId ?? '',
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
    rev: r.rev,
  };
  if (r.contentSha256) view.sha256 = r.contentSha256;
  return view;
}

export function toFolderView(r: ResourceRecord): Folder {
  return {
    id: r.id,
    name: r.name,
    parentId: r.parentId ?? '',
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    rev: r.rev,
  };
}
