import type { Request, Response } from 'express';
import type { Principal } from '../auth/principal.service';
import { DavError } from './dav.errors';
import { locksCovering, type DavLock, type DavLockStore, type LockQuery } from './dav.locks';
import { isWithin, parseDavPath, parseDestination, pathOf, type DavPath } from './dav.paths';
import { etagOf, type QuotaFigures } from './dav.props';
import type { DavService } from './dav.service';
import type { DavTree, Resolved, Writer } from './dav.tree';
import { parseIfHeader, sameEtag, submittedTokens, type IfList } from './if.header';

/** Reports a user's stored bytes and quota for RFC 4331's properties (the quota engine's seam). */
export interface QuotaReader {
  figures(userId: string): Promise<QuotaFigures>;
}

export interface DavServices {
  tree: DavTree;
  locks: DavLockStore;
  dav: DavService;
  quota: QuotaReader;
}

/** What a lock guard protects: the resource at a path, or the whole tree below it too. */
export interface Guarded {
  path: string;
  tree?: boolean;
}

/** One WebDAV request: its caller, target path, the If header and the locks of the paths it touches. */
export class DavRequest {
  readonly path: DavPath;
  readonly writer: Writer;
  readonly ifLists: IfList[] | undefined;
  readonly tokens: Set<string>;
  private readonly covering = new Map<string, Promise<DavLock[]>>();

  constructor(
    readonly req: Request,
    readonly res: Response,
    readonly principal: Principal,
    readonly services: DavServices,
  ) {
    this.path = parseDavPath(req.originalUrl);
    this.writer = { principal, requestId: String(req.id) };
    this.ifLists = parseIfHeader(header(req, 'if'));
    this.tokens = submittedTokens(this.ifLists);
  }

  get userId(): string {
    return this.principal.userId;
  }

  header(name: string): string | undefined {
    return header(this.req, name);
  }

  resolve(path: DavPath = this.path): Promise<Resolved> {
    return this.services.tree.resolve(this.userId, path);
  }

  /** The caller's active locks covering `path` (rooted there, or above it with depth infinity), read once per path. */
  locksCovering(path: string): Promise<DavLock[]> {
    let found = this.covering.get(path);
    if (!found) {
      found = this.lookupLocks({ covering: [path] });
      this.covering.set(path, found);
    }
    return found;
  }

  /**
   * The caller's active locks that the query names, without those whose root no longer holds the
   * resource they were taken on: the API, the sync client and the trash move and delete resources
   * without knowing WebDAV's locks, so a lock is checked against the tree when it is read, and one
   * that outlived its resource is removed then. Locks are few; each distinct root costs one lookup
   * per path segment.
   */
  async lookupLocks(query: LockQuery): Promise<DavLock[]> {
    const locks = await this.services.locks.lookup(this.userId, query);
    if (locks.length === 0) return locks;
    const holders = new Map<string, Promise<string | null | undefined>>();
    const holderOf = (key: string) => {
      let found = holders.get(key);
      if (!found) {
        const path = pathOf(key === '' ? [] : key.split('/').slice(1));
        found = this.resolve(path).then((r) => (r.node === undefined ? undefined : r.node.kind === 'resource' ? r.node.record.id : null));
        holders.set(key, found);
      }
      return found;
    };
    const live: DavLock[] = [];
    for (const lock of locks) {
      const holder = await holderOf(lock.path);
      const outlived = holder === undefined || (lock.resourceId !== undefined && holder !== lock.resourceId);
      if (!outlived) live.push(lock);
      else await this.services.locks.remove(this.userId, lock.token);
    }
    return live;
  }

  destination(): DavPath {
    return parseDestination(this.header('destination'), this.req.headers.host);
  }

  /**
   * Evaluates the If header (RFC 4918 10.4): true when any list holds, a list holding when each of
   * its conditions does. A state token holds when it is an active lock covering the list's resource,
   * an entity tag when it is that resource's ETag. Otherwise 412.
   */
  async checkIf(target: Resolved): Promise<void> {
    if (!this.ifLists) return;
    for (const list of this.ifLists) {
      let resource: Resolved | undefined = target;
      if (list.resource !== undefined) {
        let path: DavPath | undefined;
        try {
          path = parseDestination(list.resource, this.req.headers.host);
        } catch {
          path = undefined;
        }
        resource = path === undefined ? undefined : path.key === target.path.key ? target : await this.resolve(path);
      }
      if (!resource) continue;
      const key = resource.path.key;
      const etag = resource.node ? etagOf(resource.node) : undefined;
      const locks = list.conditions.some((c) => c.token !== undefined) ? await this.locksCovering(key) : [];
      const holds = list.conditions.every((c) => {
        const matches = c.token !== undefined ? locks.some((l) => l.token === c.token) : etag !== undefined && sameEtag(c.etag!, etag);
        return matches !== c.not;
      });
      if (holds) return;
    }
    throw new DavError(412, 'the If header does not hold');
  }

  /**
   * Refuses a write with 423 while a lock whose token the request did not submit covers what it
   * changes (RFC 4918 7.4): the resource itself, the collection whose members it changes and, for a
   * DELETE or MOVE of a collection, any lock inside it.
   */
  async guard(...targets: Guarded[]): Promise<void> {
    const covering = targets.map((t) => t.path);
    const below = targets.filter((t) => t.tree).map((t) => t.path);
    const locks = await this.lookupLocks({ covering, below });
    if (locks.length === 0) return;
    for (const t of targets) {
      const relevant = locksCovering(locks, t.path);
      if (t.tree) for (const l of locks) if (l.path !== t.path && isWithin(l.path, t.path)) relevant.push(l);
      const blocking = relevant.filter((l) => !this.tokens.has(l.token));
      if (blocking.length === 0) continue;
      if (relevant.some((l) => this.tokens.has(l.token)) && blocking.every((l) => l.scope === 'shared') && !t.tree) continue;
      throw new DavError(423, 'the resource is locked', 'lock-token-submitted', [blocking[0]!.href]);
    }
  }

  /** Depth header: `0`, `1` or `infinity`; absent gives `fallback`. Anything else: 400. */
  depth(fallback: '0' | '1' | 'infinity'): '0' | '1' | 'infinity' {
    const raw = this.header('depth')?.trim().toLowerCase();
    if (raw === undefined) return fallback;
    if (raw === '0' || raw === '1' || raw === 'infinity') return raw;
    throw new DavError(400, 'Depth must be 0, 1 or infinity');
  }
}

function header(req: Request, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
