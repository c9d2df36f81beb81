import { Router, type Request } from 'express';
import Joi from 'joi';
import { invalid } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { paging, queryString, singleParam } from '../http/request';
import { toLinkView } from './links.presenter';
import type { CreateLinkInput, LinksService, UpdateLinkInput } from './links.service';

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
/** The largest download limit the links table holds. */
const MAX_DOWNLOADS = 2 ** 31 - 1;

const password = Joi.string().min(8).max(1024);
const maxDownloads = Joi.number().integer().min(1).max(MAX_DOWNLOADS);
const expiresAt = Joi.string().pattern(TIMESTAMP);

// No member but these, as PATCH: a misspelt one (`expiry`) is a 400, not a link made without it.
const createSchema = Joi.object({
  resourceId: Joi.string().required(),
  access: Joi.string().valid('read', 'upload'),
  password,
  expiresAt,
  maxDownloads,
}).unknown(false);

// No member but these three, each with a value or null.
const updateSchema = Joi.object({
  password: password.allow(null),
  expiresAt: expiresAt.allow(null),
  maxDownloads: maxDownloads.allow(null),
}).unknown(false);

function validate<T>(schema: Joi.ObjectSchema, body: unknown): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('request body must be a JSON object');
  const { value, error } = schema.validate(body, { abortEarly: true, convert: false });
  if (error) throw invalid(error.message, error.details[0] ? { field: error.details[0].path.join('.') } : undefined);
  return value as T;
}

/** A timestamp in the future, to the millisecond; anything else is a 400. */
function futureTime(value: string): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw invalid('expiresAt must be an ISO 8601 timestamp', { field: 'expiresAt' });
  if (at.getTime() <= Date.now()) throw invalid('expiresAt must be in the future', { field: 'expiresAt' });
  return at;
}

/** Where link URLs point: PUBLIC_URL, or the origin this request came to. */
export function linkOrigin(publicUrl: string | undefined, req: Request): string {
  return publicUrl ?? `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}

/** `/links`: the caller's share links (docs/LINKS.md). */
export function linkRoutes(links: LinksService, publicUrl: string | undefined, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.post('/links', authenticated, async (req, res) => {
    const body = validate<{ resourceId: string; access?: 'read' | 'upload'; password?: string; expiresAt?: string; maxDownloads?: number }>(createSchema, req.body);
    const input: CreateLinkInput = {
      resourceId: body.resourceId,
      access: body.access ?? 'read',
      password: body.password,
      expiresAt: body.expiresAt === undefined ? undefined : futureTime(body.expiresAt),
      maxDownloads: body.maxDownloads,
    };
    const link = await links.create(principalOf(req).userId, input);
    res.status(201).json(toLinkView(link, linkOrigin(publicUrl, req)));
  });

  router.get('/links', authenticated, async (req, res) => {
    const { limit, offset } = paging(req);
    const raw = queryString(req, 'resourceId');
    if (raw !== undefined && raw !== '' && !isId(raw)) throw invalid('resourceId must be 32 lowercase hex characters', { field: 'resourceId' });
    const page = await links.list(principalOf(req).userId, raw ? raw : null, limit, offset);
    const origin = linkOrigin(publicUrl, req);
    res.json({ items: page.items.map((l) => toLinkView(l, origin)), total: page.total, limit, offset });
  });

  router.get('/links/:id', authenticated, async (req, res) => {
    res.json(toLinkView(await links.get(principalOf(req).userId, singleParam(req, 'id')), linkOrigin(publicUrl, req)));
  });

  router.patch('/links/:id', authenticated, async (req, res) => {
    const userId = principalOf(req).userId;
    // An unknown or another user's id is a 404 before the body is judged.
    await links.get(userId, singleParam(req, 'id'));
    const body = validate<{ password?: string | null; expiresAt?: string | null; maxDownloads?: number | null }>(updateSchema, req.body);
    const input: UpdateLinkInput = { password: body.password, maxDownloads: body.maxDownloads };
    if (body.expiresAt !== undefined) input.expiresAt = body.expiresAt === null ? null : futureTime(body.expiresAt);
    const link = await links.update(userId, singleParam(req, 'id'), input);
    res.json(toLinkView(link, linkOrigin(publicUrl, req)));
  });

  router.delete('/links/:id', authenticated, async (req, res) => {
    await links.revoke(principalOf(req).userId, singleParam(req, 'id'));
    res.status(204).end();
  });

  return router;
}
