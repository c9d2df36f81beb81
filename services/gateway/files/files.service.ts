import mime from 'mime-types';
import type { ListedFile, ListingRepository } from '../../../shared/db/repositories/listing.repository';
import type { ChangeAuthor, OwnerTransactions } from '../../../shared/db/owner.transaction';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import type { FileSortColumn, PageResult, ResourceRecord } from '../../../shared/db/repositories/resource.record';
import { AppError, invalid, notFound } from '../../../shared/errors';
import { isId, newId } from '../../../shared/ids';
import { extensionOf, normalizeName } from '../../../shared/names';
import { ContentNotFoundError, type ContentHandle, type ContentStore, type StagedContent } from '../../../shared/storage/content.store';
import { contentKey } from '../../../shared/content/content.keys';
import type { ContentWriter } from '../../../shared/content/content.writer';
import { ReservationRepository } from '../../../shared/quota/reservation.repository';
import type { UsageRepository } from '../../../shared/quota/usage.repository';
import { cannotFit, QuotaGuard, quotaExceeded, silentQuotaObserver, type QuotaObserver } from '../../../shared/quota/quota.guard';

export type { FileSortColumn, ResourceRecord };

/**
 * What a multipart body carries besides the file (boundaries, part headers, the small fields): a
 * body whose Content-Length exceeds the room by less than this may still hold a file that fits, so
 * it is read and decided on at the commit.
 */
const MULTIPART_FRAMING_BYTES = 64 * 1024;

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
  staged: StagedContent;
  declaredName: string;
  declaredType: string | undefined;
  fields: { id?: string; folderId?: string; name?: string };
  /** The SHA-256 (hex) the client declared for the bytes; a mismatch is a 400 and nothing is kept. */
  expectedSha256?: string;
  /** The resumable upload these bytes come from: its reservation ends in the transaction that commits them. */
  uploadId?: string;
  /**
   * Picks another name under the owner's lock when the declared one is taken, instead of the clash being
   * NAME_CONFLICT (share-link uploads); asked only after the insert under the declared name was refused.
   */
  freeName?: (trx: import('knex').Knex.Transaction, folderId: string | null, name: string) => Promise<string>;
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

/** The new file's id, folder and name from the upload's fields; a malformed one is a 400. */
function uploadTarget(input: UploadInput): { id: string; folderId: string | null; name: string; extension: string | null } {
  const { fields } = input;
  const id = fields.id === undefined || fields.id === '' ? newId() : fields.id;
  if (!isId(id)) throw invalid('id must be 32 lowercase hex characters', { field: 'id' });
  const folderId = optionalResourceId(fields.folderId, 'folderId');
  const name = normalizeName(fields.name === undefined || fields.name === '' ? input.declaredName : fields.name);
  return { id, folderId, name, extension: extensionOf(name) };
}

/**
 * Folders found active in an owner transaction, so the uploads that share it into one folder read it
 * once. They stay active until its commit: the transaction holds the owner's lock, and the writes that
 * share one (ContentWriter's commits: uploads and replacements) never remove a folder.
 */
const activeFolders = new WeakMap<object, Set<string>>();

export class FilesService {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly resources: ResourceRepository,
    private readonly writer: ContentWriter,
    private readonly listing: ListingRepository,
    private readonly store: ContentStore,
    private readonly usage: UsageRepository,
    private readonly quota: QuotaObserver = silentQuotaObserver,
  ) {}

  /**
   * The early refusal of a multipart upload whose body (Content-Length) cannot fit in the quota,
   * before a byte of it is read. Exactly decided, with the file's real size, by `upload`.
   */
  async checkDeclaredSize(userId: string, contentLength: number): Promise<void> {
    const adds = Math.max(0, contentLength - MULTIPART_FRAMING_BYTES);
    // A body within the framing allowance may add nothing, and a write that adds nothing always
    // fits (cannotFit): no read of the counters can refuse it, so none is made.
    if (adds === 0) return;
    const usage = await this.usage.read(userId);
    if (usage && cannotFit(usage, { adds })) {
      this.quota.refused('declared_size');
      throw quotaExceeded(usage, contentLength);
    }
  }

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

  /** The caller's active files among `ids` (malformed ids are simply not found), read in one statement. */
  getMany(userId: string, ids: readonly string[]): Promise<Map<string, ResourceRecord>> {
    return this.resources.findActiveFiles(userId, [...new Set(ids.filter((id) => isId(id)))]);
  }

  async delete(author: ChangeAuthor, id: string): Promise<void> {
    const { userId } = author;
    // A plain read first: an id that is not the caller's active file changes nothing, so it is
    // answered without waiting for the owner's lock (a flood of those cannot tie up the pool).
    if (!isId(id) || !(await this.resources.findActive(userId, id, 'file'))) throw notFound('no such file');
    const deleted = await this.owners.run(author, (trx, clock) =>
      this.resources.withTransaction(trx).softDeleteFile(userId, id, new Date(), clock.next()),
    );
    if (!deleted) throw notFound('no such file');
  }

  /**
   * Opens the content of a file read just before. Once open, its bytes are served whole whatever
   * happens to the file. If the key is gone by the time it is opened, a replacement committed in
   * between removed it: the file is read again and its new content opened, so a download never
   * fails because a PUT won a race. NOT_FOUND when the file has no content (a file created by a sync
   * op, or content missing from the store).
   */
  async openContent(userId: string, file: ResourceRecord): Promise<{ file: ResourceRecord; content: ContentHandle }> {
    let current: ResourceRecord | undefined = file;
    for (let attempt = 0; attempt < 3 && current?.storageKey; attempt++) {
      try {
        const content = await this.store.open(current.storageKey);
        return { file: current, content };
      } catch (err) {
        if (!(err instanceof ContentNotFoundError)) throw err;
      }
      const reread: ResourceRecord | undefined = await this.resources.findActive(userId, file.id, 'file');
      if (reread?.storageKey === current.storageKey) break;
      current = reread;
    }
    throw notFound('this file has no content');
  }

  async listFolders(userId: string, parentId: string | null): Promise<ResourceRecord[]> {
    if (parentId !== null) await this.requireFolder(userId, parentId);
    return this.listing.listFolders(userId, parentId);
  }

  /**
   * Creates the file row and places the staged bytes under its key in one transaction (see
   * ContentWriter): if the insert fails nothing is placed, and if the commit fails the placed
   * content is removed again. The staged bytes never outlive this call.
   */
  async upload(input: UploadInput): Promise<ResourceRecord> {
    const { staged, userId, deviceId } = input;
    let target!: { id: string; folderId: string | null; name: string; extension: string | null };
    return this.writer.commit({
      author: { userId, deviceId },
      staged,
      check: () => {
        if (input.expectedSha256 !== undefined && input.expectedSha256 !== staged.sha256) {
          throw invalid('the file does not match the sha256 declared for it', { field: 'sha256' });
        }
        target = uploadTarget(input);
      },
      decide: async (trx, clock) => {
        const { id, folderId, extension } = target;
        const repo = this.resources.withTransaction(trx);
        if (folderId !== null && !activeFolders.get(trx)?.has(folderId)) {
          if (!(await repo.findActive(userId, folderId, 'folder'))) throw notFound('no such folder');
          activeFolders.set(trx, (activeFolders.get(trx) ?? new Set()).add(folderId));
        }
        // A resumable upload's bytes were reserved at its creation: they are in the quota already.
        const reserved = input.uploadId ? await new ReservationRepository(trx).release(userId, input.uploadId) : 0;
        const quota = new QuotaGuard(trx, this.quota);
        await quota.admit(userId, { adds: staged.size - reserved });
        const now = new Date();
        const named = (name: string): Omit<ResourceRecord, 'changeSeq' | 'changeDeviceId'> => ({
          id,
          userId,
          parentId: folderId,
          type: 'file',
          name,
          sizeBytes: staged.size,
          mimeType: resolveMimeType(input.declaredType, name),
          extension,
          storageKey: contentKey(deviceId, id, extension),
          contentSha256: staged.sha256,
          createdAt: now,
          updatedAt: now,
          deletedAt: null,
          rev: 1,
          contentAt: now,
          contentDeviceId: deviceId,
        });
        const change = clock.next();
        let record = named(target.name);
        try {
          await repo.insert({ ...record, change });
        } catch (err) {
          // The sibling-name key refused the declared name; a failed statement leaves the transaction
          // usable (statement rollback), so the free name is looked for only when one is needed.
          if (!input.freeName || !(err instanceof AppError && err.code === 'NAME_CONFLICT')) throw err;
          record = named(await input.freeName(trx, folderId, target.name));
          await repo.insert({ ...record, change });
        }
        const dropped = await quota.makeRoom(userId);
        return {
          key: contentKey(deviceId, id, extension),
          droppedKeys: dropped.map((v) => v.storageKey),
          mimeType: record.mimeType,
          result: { ...record, changeSeq: change.seq, changeDeviceId: change.deviceId },
        };
      },
    });
  }

  /** NOT_FOUND unless the caller has an active folder of that id. */
  async requireFolder(userId: string, folderId: string): Promise<void> {
    if (!(await this.resources.findActive(userId, folderId, 'folder'))) throw notFound('no such folder');
  }
}
