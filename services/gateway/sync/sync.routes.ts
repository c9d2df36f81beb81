import express, { Router } from 'express';
import { invalid } from '../../../shared/errors';
import { isPlainObject, jsonTooDeep, parseLossless, stringifyLossless } from '../../../shared/json';
import { tooDeep } from '../http/errors.middleware';
import { renderBatchResult } from '../../../shared/sync/batch.result';
import { claimsOf, principalOf, type requireToken, type requireUser } from '../auth/auth.middleware';
import { queryString } from '../http/request';
import type { BatchSubmitter } from './batch.submitter';
import type { PermissionsService } from './permissions.service';

export const MAX_OPS = 1000;
// 9999-12-31T23:59:59.999Z: the last instant a timestamp column (and the API's ISO form) can hold.
const MAX_EPOCH_MS = 253402300799999;

/** Reads the batch envelope, keeping every number as written. Ops themselves are checked by the worker. */
export function parseBatch(text: unknown): string {
  if (typeof text !== 'string' || text.length === 0) throw invalid('request body must be a JSON object with an "ops" array');
  if (jsonTooDeep(text)) throw tooDeep();
  let body: unknown;
  try {
    body = parseLossless(text);
  } catch {
    throw invalid('request body is not valid JSON');
  }
  if (!isPlainObject(body) || !Array.isArray(body.ops)) throw invalid('request body must be a JSON object with an "ops" array');
  if (body.ops.length < 1 || body.ops.length > MAX_OPS) throw invalid(`ops must hold 1 to ${MAX_OPS} operations`);
  return stringifyLossless(body.ops);
}

export interface SyncAuth {
  authenticated: ReturnType<typeof requireUser>;
  /** The batch route's: the token only; the accept checks its user and device (BatchSubmitter.submit). */
  token: ReturnType<typeof requireToken>;
}

export function syncRoutes(sync: BatchSubmitter, permissions: PermissionsService, auth: SyncAuth): Router {
  const router = Router();
  const { authenticated } = auth;
  const { verified, confirm } = auth.token;
  const text = express.text({ type: ['application/json', 'application/*+json'], limit: '1mb' });
  // A body refused before the accept is answered 401 first when the token's user or device is gone.
  const rawJson: express.RequestHandler = (req, res, next) =>
    text(req, res, (err?: unknown) => {
      if (err === undefined) return next();
      confirm(req).then(() => next(err), next);
    });

  router.post('/sync/ops', verified, rawJson, async (req, res) => {
    let opsJson: string;
    try {
      opsJson = parseBatch(req.body);
    } catch (err) {
      await confirm(req);
      throw err;
    }
    const claims = claimsOf(req);
    const result = await sync.submit({
      requestId: String(req.id),
      userId: claims.userId,
      deviceId: claims.deviceId,
      opsJson,
      acceptedAt: Date.now(),
    });
    res.status(200).type('application/json').send(renderBatchResult(result));
  });

  router.get('/sync/permissions', authenticated, async (req, res) => {
    const raw = queryString(req, 'after') ?? '0';
    if (!/^\d{1,16}$/.test(raw) || Number(raw) > MAX_EPOCH_MS) {
      throw invalid(`after must be a non-negative integer of epoch milliseconds, at most ${MAX_EPOCH_MS} (year 9999)`);
    }
    res.json(await permissions.snapshot(principalOf(req).userId, Number(raw)));
  });

  return router;
}
