import { promises as fs } from 'node:fs';
import path from 'node:path';
import mime from 'mime-types';
import type { ListedFile, ListingRepository } from '../../../shared/db/listing.repository';
import type { ChangeAuthor, ChangeStamp, OwnerTransactions } from '../../../shared/db/owner.transaction';
import type { FileSortColumn, PageResult, ResourceRecord, ResourceRepository } from '../../../shared/db/resource.repository';
import { invalid, notFound } from '../../../shared/errors';
import { isId, newId } from '../../../shared/ids';
import { extensionOf, normalizeName } from '../../../shared/names';
import type { StagedFile } from './upload.storage';

export interface ListFilesInput {
  folderId: string | null;
  sort: FileSortColumn;
  descending: boolean;
  limit: number;
  offset: number;
}

export interface UploadInput {
  userId: string;
  deviceId: string;
  staged: StagedFile;
  declaredName: string;
  declaredType: string | undefined;
  fields: { id?: string; folderId?: string; name?: string };
  /** The SHA-256 (hex) the client declared for the bytes; a mismatch is a 400 and nothing is kept. */
  expectedSha256?: string;
}

export const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The part's declared type; when missing, generic or malformed, the type the extension implies. */
export function resolveMimeType(declared: string | undefined, name: string): string {
  const type = declared?.split(';')[0]?.trim().toLowerCase();
  if (type && type !== 'application/octet-stream' && MEDIA_TYPE.test(type)) return type;
  return mime.lookup(name) || type || '';
}

/** Reads an optional resource id (folder or parent): empty means the root, malformed is a 400. */
export function optionalResourceId(value: string | undefined, field: string): string | null {
  if (value === undefined || value === '') return null;
  if (!isId(value)) throw invalid(`${field} must be 32 lowercase hex characters`);
  return value;
}

export class FilesService {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly resources: ResourceRepository,
    private readonly uploadDir: string,
    private readonly listing: ListingRepository,
  ) {}

  async list(userId: string, input: ListFilesInput): Promise<PageResult<ListedFile>> {
    if (input.folderId !== null) await this.requireFolder(userId, input.folderId);
    return this.listing.listFiles(userId, input.folderId, input);
  }

  search(userId: string, text: string, limit: number, offset: number): Promise<PageResult<ListedFile>> {
    return this.listing.searchFiles(userId, text.normalize('NFC'), limit, offset);
  }

  async get(userId: string, id: string): Promise<ResourceRecord> {
    const file = isId(id) ? await this.resources.findActive(userId, id, 'file') : undefined;
    if (!file) throw notFound('no such file');
    return file;
  }

  async delete(author: ChangeAuthor, id: string): Promise<void> {
    const { userId } = author;
    if (!isId(id)) throw notFound('no such file');
    const deleted = await this.owners.run(author, (trx, clock) =>
      this.resources.withTransaction(trx).softDeleteFile(userId, id, new Date(), clock.next()),
    );
    if (!deleted) throw notFound('no such file');
  }

  /** Where a file's bytes are, or NOT_FOUND when it has none (a file created by a sync op). */
  async contentOf(userId: string, id: string): Promise<{ file: ResourceRecord; absolutePath: string }> {
    const file = await this.get(userId, id);
    if (!file.storageKey) throw notFound('this file has no content');
    return { file, absolutePath: path.join(this.uploadDir, file.storageKey) };
  }

  async listFolders(userId: string, parentId: string | null): Promise<ResourceRecord[]> {
    if (parentId !== null) await this.requireFolder(userId, parentId);
    return this.listing.listFolders(userId, parentId);
  }

  /**
   * Creates the file row and moves the staged bytes into place in one transaction: if the insert
   * fails nothing is moved, and if the commit fails the moved file is removed again. The staged file
   * never outlives this call.
   */
  async upload(input: UploadInput): Promise<ResourceRecord> {
    const { staged, userId, deviceId, fields } = input;
    let placed: string | undefined;
    try {
      if (input.expectedSha256 !== undefined && input.expectedSha256 !== staged.sha256) {
        throw invalid('the file does not match the sha256 declared for it', { field: 'sha256' });
      }
      const id = fields.id === undefined || fields.id === '' ? newId() : fields.id;
      if (!isId(id)) throw invalid('id must be 32 lowercase hex characters', { field: 'id' });
      const folderId = optionalResourceId(fields.folderId, 'folderId');
      const name = normalizeName(fields.name === undefined || fields.name === '' ? input.declaredName : fields.name);
      const extension = extensionOf(name);
      const storageKey = `${deviceId}/${id}${extension ? `.${extension}` : ''}`;
      const now = new Date();
      const record: Omit<ResourceRecord, 'changeSeq' | 'changeDeviceId'> = {
        id,
        userId,
        parentId: folderId,
        type: 'file',
        name,
        sizeBytes: staged.size,
        mimeType: resolveMimeType(input.declaredType, name),
        extension,
        storageKey,
        contentSha256: staged.sha256,
        createdAt: now,
        updatedAt: now,
        deletedAt: null,
        rev: 1,
      };
      const change = await this.owners.run<ChangeStamp>({ userId, deviceId }, async (trx, clock) => {
        const repo = this.resources.withTransaction(trx);
        if (folderId !== null && !(await repo.findActive(userId, folderId, 'folder'))) throw notFound('no such folder');
        const stamp = clock.next();
        await repo.insert({ ...record, change: stamp });
        const target = path.join(this.uploadDir, storageKey);
        await fs.mkdir(path.dirname(target), { recursive: true });
        await fs.rename(staged.path, target);
        placed = target;
        return stamp;
      });
      placed = undefined;
      return { ...record, changeSeq: change.seq, changeDeviceId: change.deviceId };
    } finally {
      await fs.rm(staged.path, { force: true });
      if (placed) await fs.rm(placed, { force: true });
    }
  }

  private async requireFolder(userId: string, folderId: string): Promise<void> {
    if (!(await this.resources.findActive(userId, folderId, 'folder'))) throw notFound('no such folder');
  }
}
