import type { ResourceRecord } from '../../../shared/db/resource.repository';

export interface FileView {
  id: string;
  name: string;
  size: number;
  mimeType: string;
  folderId: string;
  createdAt: string;
  updatedAt: string;
  rev: number;
  sha256?: string;
}

export interface FolderView {
  id: string;
  name: string;
  parentId: string;
  createdAt: string;
  updatedAt: string;
  rev: number;
}

export function toFileView(r: ResourceRecord): FileView {
  const view: FileView = {
    id: r.id,
    name: r.name,
    size: r.sizeBytes,
    mimeType: r.mimeType ?? '',
    folderId: r.parentId ?? '',
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    rev: r.rev,
  };
  if (r.contentSha256) view.sha256 = r.contentSha256;
  return view;
}

export function toFolderView(r: ResourceRecord): FolderView {
  return {
    id: r.id,
    name: r.name,
    parentId: r.parentId ?? '',
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
    rev: r.rev,
  };
}
