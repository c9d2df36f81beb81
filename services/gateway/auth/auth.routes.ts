import { Router, type RequestHandler } from 'express';
import Joi from 'joi';
import { validateBody } from '../http/request';
import { principalOf, type requireUser } from './auth.middleware';
import type { AuthService } from './auth.service';

const PASSWORD = Joi.string().min(8).max(1024);

const loginSchema = Joi.object({
  username: Joi.string().min(1).max(255).required(),
  password: Joi.string().min(1).max(1024).required(),
  deviceId: Joi.string().required(),
});

const passwordSchema = Joi.object({
  current_password: Joi.string().min(1).max(1024).required(),
  new_password: PASSWORD.required(),
});

/**
 * `limits` run before the body is validated and before any password is hashed: the sign-in limits
 * per client address and per address and username (built in app.ts).
 */
export function authRoutes(auth: AuthService, limits: RequestHandler[], authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.post('/auth/login', ...limits, async (req, res) => {
    const body = validateBody(loginSchema, req.body);
    const result = await auth.login(body.username, body.password, body.deviceId);
    res.status(200).json(result);
  });

  router.patch('/users/me/password', authenticated, async (req, res) => {
    const body = validateBody(passwordSchema, req.body);
    await auth.changePassword(principalOf(req).userId, body.current_password, body.new_password);
    res.status(204).end();
  });

  return router;
}
