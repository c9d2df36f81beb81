import { Router } from 'express';
import Joi from 'joi';
import { AppError, invalid, notFound } from '../../../shared/errors';
import { isId, newId } from '../../../shared/ids';
import type { UserRecord, UserRepository } from '../../../shared/db/user.repository';
import type { UsageService } from '../usage/usage.service';
import { principalOf, requireAdmin, type requireUser } from '../auth/auth.middleware';
import type { PasswordHasher } from '../auth/password.hasher';
import type { PrincipalCache } from '../auth/principal.cache';
import { queryString, singleParam, validateBody } from '../http/request';

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

export function userRoutes(
  users: UserRepository,
  hasher: PasswordHasher,
  principals: PrincipalCache,
  authenticated: ReturnType<typeof requireUser>,
  usage: UsageService,
  defaultQuotaBytes: number | null,
): Router {
  const router = Router();

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
    const user = await users.findByUsername(username);
    if (!user || user.deletedAt !== null) throw notFound('no such user');
    res.json({ id: user.id, username: user.username });
  });

  router.post('/users', authenticated, requireAdmin, async (req, res) => {
    const body = validateBody(createUserSchema, req.body);
    const user = {
      id: newId(),
      username: body.username,
      email: body.email ?? null,
      passwordHash: await hasher.hash(body.password),
      isAdmin: body.isAdmin ?? false,
      createdAt: new Date(),
      quotaBytes: defaultQuotaBytes,
    };
    await users.insert(user);
    res.status(201).json(toAdminView(user));
  });

  router.delete('/users/:id', authenticated, requireAdmin, async (req, res) => {
    const id = singleParam(req, 'id');
    if (!isId(id)) throw notFound('no such user');
    if (id === principalOf(req).userId) throw new AppError('INVALID_REQUEST', 'administrators cannot delete their own account');
    if (!(await users.softDelete(id, new Date()))) throw notFound('no such user');
    await principals.revoked(id);
    res.status(204).end();
  });

  return router;
}
