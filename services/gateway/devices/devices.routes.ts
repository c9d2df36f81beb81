import { Router, type RequestHandler } from 'express';
import Joi from 'joi';
import { validateBody } from '../http/request';
import type { DevicesService } from './devices.service';

const registerSchema = Joi.object({
  name: Joi.string().min(1).max(100).required(),
  platform: Joi.string().max(50).allow(null),
});

/** `limit` is the registration limit per client address, checked before anything else. */
export function deviceRoutes(devices: DevicesService, limit: RequestHandler): Router {
  const router = Router();

  router.post('/devices', limit, async (req, res) => {
    const body = validateBody(registerSchema, req.body);
    const device = await devices.register(body.name, body.platform ?? null);
    res.status(201).json({ id: device.id, name: device.name, platform: device.platform, createdAt: device.createdAt.toISOString() });
  });

  return router;
}
