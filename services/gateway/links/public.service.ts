import type { Request } from 'express';
import type { LinkedResource, LinkRecord, LinkRepository, PublicChild } from '../../../shared/db/repositories/link.repository';
import type { PageResult, ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import type { TreeRepository } from '../../../shared/db/repositories/tree.repository';
import { AppError, invalid, notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { PasswordHasher } from '../auth/password.hasher';
import type { LinkSecrets } from './link.secrets';
import { takeAttempts, type AttemptLimit } from '../auth/attempt.limit';

/** Tokens are base64url; anything else (or longer than any token) is not looked up. */
const TOKEN = /^[A-Za-z0-9_-]{16,64}$/;

/** The one answer for a link that does not answer, whatever the reason, and for ids outside its subtree. */
export const linkGone = () => notFound('no such link, or it is no longer available');

/** A live link with its resource, as a public request resolved it. */
export interface LiveLink {
  link: LinkRecord;
  resource: LinkedResource;
}

/**
 * The access strings a request presents: `Authorization: Bearer <access>` and `?access=`. Both are
 * tried, so a client that sends a Bearer of its own (a signed-in user's token) can still follow a
 * link with `?access=`.
 */
function presentedAccess(req: Request): string[] {
  const out: string[] = [];
  const header = req.headers.authorization;
  if (typeof header === 'string' && /^Bearer /i.test(header)) out.push(header.slice(7).trim());
  const query = (req.query as Record<string, unknown>).access;
  if (typeof query === 'string') out.push(query);
  return out;
}

/**
 * The public side of share links: resolving a token (from the database on every request, so a
 * revocation, an expiry or a trashed resource holds on every gateway at once), the password unlock,
 * and the confinement of ids to the linked subtree.
 */
export class PublicLinksService {
  constructor(
    private readonly links: LinkRepository,
    private readonly resources: ResourceRepository,
    private readonly tree: TreeRepository,
    private readonly hasher: PasswordHasher,
    private readonly secrets: LinkSecrets,
    private readonly attempts: { perLink: AttemptLimit; perAddress: AttemptLimit },
  ) {}

  async resolve(token: string): Promise<LiveLink> {
    const live = TOKEN.test(token) ? await this.links.findLive(token, new Date()) : undefined;
    if (!live) throw linkGone();
    return live;
  }

  /** PASSWORD_REQUIRED unless the link has no password or the request carries a valid access string for it. */
  requireUnlocked(req: Request, link: LinkRecord): void {
    if (link.passwordHash === null) return;
    const subject = { linkId: link.id, passwordGen: link.passwordGen };
    if (presentedAccess(req).some((access) => this.secrets.verify(subject, access))) return;
    throw new AppError('PASSWORD_REQUIRED', 'this link needs its password: unlock it first');
  }

  /**
   * Checks a password. The attempt is counted (per link and per client address) before any hashing, so
   * a burst never checks more passwords than the limits allow; right and wrong cost the same Argon2 check.
   */
  async unlock(link: LinkRecord, password: string, address: string): Promise<{ access: string; expiresAt: Date }> {
    // The address first, so rotating links from one address cannot dodge it.
    const attempt = await takeAttempts([
      [this.attempts.perAddress, address, 'too many password attempts from this address, retry later'],
      [this.attempts.perLink, link.id, 'too many password attempts on this link, retry later'],
    ]);
    const ok = await this.hasher.verify(link.passwordHash ?? undefined, password);
    if (!ok || link.passwordHash === null) throw new AppError('UNAUTHORIZED', 'wrong password');
    await attempt.succeeded();
    return this.secrets.issue({ linkId: link.id, passwordGen: link.passwordGen });
  }

  /** A folder of the link's subtree (id and name): the linked folder when `folderId` is absent. */
  async folder(live: LiveLink, folderId: string | undefined): Promise<{ id: string; name: string }> {
    if (folderId === undefined || folderId === '' || folderId === live.resource.id) return { id: live.resource.id, name: live.resource.name };
    if (!isId(folderId)) throw invalid('folderId must be 32 lowercase hex characters', { field: 'folderId' });
    return this.within(live, folderId, 'folder');
  }

  /** The file a content request names: the linked file itself, or a file of the linked folder's subtree. */
  async file(live: LiveLink, fileId: string | undefined): Promise<ResourceRecord> {
    const { link, resource } = live;
    if (resource.type === 'file') {
      if (fileId !== undefined) throw invalid('fileId is not accepted on a link to a file', { field: 'fileId' });
      const file = await this.resources.findActive(link.userId, resource.id, 'file');
      if (!file) throw linkGone();
      return file;
    }
    if (fileId === undefined || fileId === '') throw invalid('fileId is required on a link to a folder', { field: 'fileId' });
    if (!isId(fileId)) throw invalid('fileId must be 32 lowercase hex characters', { field: 'fileId' });
    return this.within(live, fileId, 'file');
  }

  /** The answer for a link that does not answer (see linkGone). */
  gone(): AppError {
    return linkGone();
  }

  children(live: LiveLink, folderId: string, limit: number, offset: number): Promise<PageResult<PublicChild>> {
    return this.links.children(live.link.userId, folderId, limit, offset);
  }

  /** Counts a download that starts now; a link used up meanwhile (another download won the last one) is gone. */
  async countDownload(link: LinkRecord): Promise<void> {
    if (!(await this.links.countDownload(link.id, new Date()))) throw linkGone();
  }

  /**
   * Counts a download whose response can end after the count: `ready` once its first byte may leave,
   * `counted` once the count is recorded (it rejects as countDownload does; the caller ends the
   * response only after it, so whoever holds the whole body sees the count). A link with a download
   * limit is counted before anything is sent, as another download may take the last one; one without
   * is counted while the bytes go, as its count cannot change the answer.
   */
  beginDownload(link: LinkRecord): { ready: Promise<void>; counted: Promise<void> } {
    const counted = this.countDownload(link);
    // Handled here too: a response that fails before it ends never waits for it.
    counted.catch(() => undefined);
    return { ready: link.maxDownloads === null ? Promise.resolve() : counted, counted };
  }

  /**
   * An active resource of the owner inside the linked folder's subtree. The walk up is the tree
   * repository's, which goes past the servers' recursion limit; a direct child needs no walk.
   */
  private async within(live: LiveLink, id: string, type: 'file' | 'folder'): Promise<ResourceRecord> {
    const { link, resource } = live;
    if (resource.type !== 'folder') throw linkGone();
    const found = await this.resources.findActive(link.userId, id, type);
    if (!found || found.parentId === null) throw linkGone();
    if (found.parentId === resource.id) return found;
    if (!(await this.tree.isSelfOrAncestor(link.userId, found.parentId, resource.id))) throw linkGone();
    return found;
  }
}
