import { Router, type RequestHandler } from 'express';
import Joi from 'joi';
import { newId } from '../../../shared/ids';
import type { DeviceRepository } from '../../../shared/db/device.repository';
import { validateBody } from '../http/request';

const registerSchema = Joi.object({
  name: Joi.string().min(1).max(100).required(),
  platform: Joi.string().max(50).allow(null),
});

/** `limit` is the registration limit per client address, checked before anything else. */
export function deviceRoutes(devices: DeviceRepository, limit: RequestHandler): Router {
  const router = Router();

  router.post('/devices', limit, async (req, res) => {
    const body = validateBody(registerSchema, req.body);
    const device = { id: newId(), name: body.name, platform: body.platform ?? null, userId: null, createdAt: new Date() };
    await devices.insert(device);
    res.status(201).json({ id: device.id, name: device.name, platform: device.platform, createdAt: device.createdAt.toISOString() });
  });

  return router;
}
