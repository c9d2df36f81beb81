import type { LinkAccess, LinkChange, LinkRecord, LinkRepository } from '../../../shared/db/repositories/link.repository';
import type { PageResult } from '../../../shared/db/repositories/resource.record';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import { invalid, notFound } from '../../../shared/errors';
import { isId, newId } from '../../../shared/ids';
import type { PasswordHasher } from '../auth/password.hasher';
import type { LinkSecrets } from './link.secrets';

/** The platform and name recorded on a link's device. */
export const LINK_PLATFORM = 'link';
const LINK_DEVICE_NAME = 'share link';

export interface CreateLinkInput {
  resourceId: string;
  access: LinkAccess;
  password: string | undefined;
  expiresAt: Date | undefined;
  maxDownloads: number | undefined;
}

export interface UpdateLinkInput {
  password?: string | null;
  expiresAt?: Date | null;
  maxDownloads?: number | null;
}

/**
 * The owner's side of share links: each link is created with a device of its own, its password kept
 * only as an Argon2id hash. Every read and write is scoped to the owner; another user's link is absent.
 */
export class LinksService {
  constructor(
    private readonly links: LinkRepository,
    private readonly resources: ResourceRepository,
    private readonly hasher: PasswordHasher,
    private readonly secrets: LinkSecrets,
  ) {}

  async create(userId: string, input: CreateLinkInput): Promise<LinkRecord> {
    const resource = isId(input.resourceId) ? await this.resources.findActive(userId, input.resourceId) : undefined;
    if (!resource) throw notFound('no such file or folder');
    if (input.access === 'upload' && resource.type !== 'folder') throw invalid('an upload link must be to a folder', { field: 'access' });
    if (input.access === 'upload' && input.maxDownloads !== undefined) throw invalid('an upload link has no download limit', { field: 'maxDownloads' });
    const link: LinkRecord = {
      id: newId(),
      userId,
      deviceId: newId(),
      resourceId: resource.id,
      resourceType: resource.type,
      token: this.secrets.newToken(),
      access: input.access,
      passwordHash: input.password === undefined ? null : await this.hasher.hash(input.password),
      passwordGen: 0,
      // Stored to the millisecond, as every timestamp.
      expiresAt: input.expiresAt ?? null,
      maxDownloads: input.maxDownloads ?? null,
      downloads: 0,
      createdAt: new Date(),
    };
    await this.links.insert(link, LINK_DEVICE_NAME, LINK_PLATFORM);
    return link;
  }

  list(userId: string, resourceId: string | null, limit: number, offset: number): Promise<PageResult<LinkRecord>> {
    return this.links.list(userId, resourceId, limit, offset);
  }

  async get(userId: string, id: string): Promise<LinkRecord> {
    const link = isId(id) ? await this.links.find(userId, id) : undefined;
    if (!link) throw notFound('no such link');
    return link;
  }

  async update(userId: string, id: string, input: UpdateLinkInput): Promise<LinkRecord> {
    const link = await this.get(userId, id);
    if (link.access === 'upload' && input.maxDownloads !== undefined && input.maxDownloads !== null) {
      throw invalid('an upload link has no download limit', { field: 'maxDownloads' });
    }
    const change: LinkChange = { expiresAt: input.expiresAt, maxDownloads: input.maxDownloads };
    if (input.password !== undefined) change.passwordHash = input.password === null ? null : await this.hasher.hash(input.password);
    if (!(await this.links.update(userId, link.id, change))) throw notFound('no such link');
    return this.get(userId, link.id);
  }

  async revoke(userId: string, id: string): Promise<void> {
    if (!isId(id) || !(await this.links.delete(userId, id, new Date()))) throw notFound('no such link');
  }
}
