import { Router, type RequestHandler } from 'express';
import Joi from 'joi';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { singleParam, validateBody } from '../http/request';
import type { DevicesService } from './devices.service';
import type { OwnDevice, UserDevicesService } from './user-devices.service';

const registerSchema = Joi.object({
  name: Joi.string().min(1).max(100).required(),
  platform: Joi.string().max(50).allow(null),
});

const view = (d: OwnDevice) => ({
  id: d.id,
  name: d.name,
  platform: d.platform,
  createdAt: d.createdAt.toISOString(),
  lastUsedAt: d.lastUsedAt ? d.lastUsedAt.toISOString() : null,
  current: d.current,
});

/** `limit` is the registration limit per client address, checked before anything else. */
export function deviceRoutes(devices: DevicesService, limit: RequestHandler, own: UserDevicesService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.post('/devices', limit, async (req, res) => {
    const body = validateBody(registerSchema, req.body);
    const device = await devices.register(body.name, body.platform ?? null);
    res.status(201).json({ id: device.id, name: device.name, platform: device.platform, createdAt: device.createdAt.toISOString() });
  });

  router.get('/devices', authenticated, async (req, res) => {
    res.json({ items: (await own.list(principalOf(req))).map(view) });
  });

  router.delete('/devices/:id', authenticated, async (req, res) => {
    await own.retire(principalOf(req).userId, singleParam(req, 'id'));
    res.status(204).end();
  });

  return router;
}
