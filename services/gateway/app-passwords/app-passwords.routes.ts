import { Router } from 'express';
import Joi from 'joi';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { clientAddress } from '../auth/rate.limits';
import { singleParam, validateBody } from '../http/request';
import type { AppPasswordRecord, AppPasswordsService } from './app-passwords.service';

const createSchema = Joi.object({
  name: Joi.string().min(1).max(100).required(),
  currentPassword: Joi.string().min(1).max(1024).required(),
});

const view = (r: AppPasswordRecord) => ({
  id: r.id,
  name: r.name,
  deviceId: r.deviceId,
  createdAt: r.createdAt.toISOString(),
  lastUsedAt: r.lastUsedAt ? r.lastUsedAt.toISOString() : null,
});

/** `/app-passwords`: the caller's passwords for WebDAV clients (docs/WEBDAV.md). */
export function appPasswordRoutes(service: AppPasswordsService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.post('/app-passwords', authenticated, async (req, res) => {
    const { name, currentPassword } = validateBody(createSchema, req.body);
    const created = await service.create(principalOf(req), name, currentPassword, clientAddress(req));
    res.status(201).json({
      id: created.id,
      name: created.name,
      password: created.password,
      deviceId: created.deviceId,
      createdAt: created.createdAt.toISOString(),
    });
  });

  router.get('/app-passwords', authenticated, async (req, res) => {
    const items = await service.list(principalOf(req).userId);
    res.json({ items: items.map(view) });
  });

  router.delete('/app-passwords/:id', authenticated, async (req, res) => {
    await service.revoke(principalOf(req).userId, singleParam(req, 'id'));
    res.status(204).end();
  });

  return router;
}
