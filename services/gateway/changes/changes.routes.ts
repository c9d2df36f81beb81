import { Router } from 'express';
import { invalid } from '../../../shared/errors';
import type { Change } from '../../../shared/protocol';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { queryString } from '../http/request';
import type { ChangesService, ResourceRecord } from './changes.service';

export const FEED_DEFAULT_LIMIT = 500;
export const FEED_MAX_LIMIT = 1000;
export const FEED_MAX_WAIT_SECONDS = 60;

/** One resource in the feed, as of the response. */
export function toChangeView(r: ResourceRecord): Change {
  const view: Change = {
    id: r.id,
    type: r.type,
    name: r.name,
    parentId: r.parentId ?? '',
    deleted: r.deletedAt !== null,
    rev: r.rev,
    updatedAt: r.updatedAt.toISOString(),
    deviceId: r.changeDeviceId,
  };
  if (r.type === 'file') {
    view.size = r.sizeBytes;
    view.mimeType = r.mimeType ?? '';
    if (r.contentSha256) view.sha256 = r.contentSha256;
  }
  return view;
}

function feedLimit(raw: string | undefined): number {
  if (raw === undefined) return FEED_DEFAULT_LIMIT;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw invalid('limit must be a positive integer');
  return Math.min(Number(raw), FEED_MAX_LIMIT);
}

function waitSeconds(raw: string | undefined): number {
  if (raw === undefined) return 0;
  if (!/^\d{1,2}$/.test(raw) || Number(raw) > FEED_MAX_WAIT_SECONDS) throw invalid(`wait must be an integer from 0 to ${FEED_MAX_WAIT_SECONDS} seconds`);
  return Number(raw);
}

export function changeRoutes(changes: ChangesService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.get('/sync/changes', authenticated, async (req, res) => {
    const limit = feedLimit(queryString(req, 'limit'));
    const waitMs = waitSeconds(queryString(req, 'wait')) * 1000;
    const cursor = queryString(req, 'cursor');
    const gone = new AbortController();
    // 'close' on the response fires when the client hangs up before the answer is written.
    res.on('close', () => gone.abort());
    const page = await changes.feed({ userId: principalOf(req).userId, cursor, limit, waitMs, signal: gone.signal });
    if (gone.signal.aborted) return;
    res.json({ items: page.items.map(toChangeView), cursor: page.cursor, hasMore: page.hasMore });
  });

  return router;
}
