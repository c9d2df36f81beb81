import { Router } from 'express';
import Joi from 'joi';
import { invalid } from '../../../shared/errors';
import type { UsageService } from '../quota/usage.service';
import { principalOf, requireAdmin, type requireUser } from '../auth/auth.middleware';
import { paging, queryString, singleParam, validateBody } from '../http/request';
import type { UserRecord, UsersService } from './users.service';

export const USERNAME = Joi.string().pattern(/^[A-Za-z0-9._-]{3,64}$/).messages({
  'string.pattern.base': '"username" must be 3 to 64 characters of letters, digits, ".", "_" and "-"',
});

const createUserSchema = Joi.object({
  username: USERNAME.required(),
  password: Joi.string().min(8).max(1024).required(),
  email: Joi.string().email({ tlds: false }).max(254).allow(null),
  isAdmin: Joi.boolean(),
});

/** The admin representation of a user. */
function toAdminView(user: Pick<UserRecord, 'id' | 'username' | 'email' | 'isAdmin' | 'createdAt' | 'quotaBytes'>) {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    isAdmin: user.isAdmin,
    createdAt: user.createdAt.toISOString(),
    quotaBytes: user.quotaBytes,
  };
}

/** `{"quotaBytes": <int >= 0> | null}` and nothing else. */
function quotaOf(body: unknown): number | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('request body must be a JSON object');
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== 'quotaBytes') throw invalid('the body must be {"quotaBytes": <integer >= 0 or null>}');
  const value = (body as { quotaBytes: unknown }).quotaBytes;
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalid('"quotaBytes" must be an integer from 0 to 2^53 - 1, or null', { field: 'quotaBytes' });
  }
  return value;
}

export function userRoutes(users: UsersService, usage: UsageService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.get('/users/me', authenticated, async (req, res) => {
    const me = await users.me(principalOf(req).userId);
    res.json({ id: me.id, username: me.username, email: me.email, isAdmin: me.isAdmin, quotaBytes: me.quotaBytes });
  });

  router.get('/users', authenticated, requireAdmin, async (req, res) => {
    const { limit, offset } = paging(req);
    const page = await users.list(limit, offset);
    res.json({ items: page.items.map((u) => ({ ...toAdminView(u), usedBytes: u.usedBytes })), total: page.total, limit, offset });
  });

  router.get('/users/me/usage', authenticated, async (req, res) => {
    res.json(await usage.of(principalOf(req).userId));
  });

  router.get('/users/:id/usage', authenticated, requireAdmin, async (req, res) => {
    res.json(await usage.of(singleParam(req, 'id')));
  });

  router.patch('/users/:id', authenticated, requireAdmin, async (req, res) => {
    const id = singleParam(req, 'id');
    const quotaBytes = quotaOf(req.body);
    res.json(toAdminView(await usage.setQuota(id, quotaBytes)));
  });

  router.get('/users/resolve', authenticated, async (req, res) => {
    const username = queryString(req, 'username');
    if (!username) throw invalid('query parameter username is required');
    res.json(await users.resolve(username));
  });

  router.post('/users', authenticated, requireAdmin, async (req, res) => {
    const body = validateBody(createUserSchema, req.body);
    const user = await users.create({ username: body.username, password: body.password, email: body.email ?? null, isAdmin: body.isAdmin ?? false });
    res.status(201).json(toAdminView(user));
  });

  router.delete('/users/:id', authenticated, requireAdmin, async (req, res) => {
    await users.delete(principalOf(req).userId, singleParam(req, 'id'));
    res.status(204).end();
  });

  return router;
}
