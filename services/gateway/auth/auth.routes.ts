import { Router } from 'express';
import Joi from 'joi';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { AppError } from '../../../shared/errors';
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

export function authRoutes(auth: AuthService, loginRateLimit: number, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  const limiter =
    loginRateLimit > 0
      ? rateLimit({
          windowMs: 60_000,
          limit: loginRateLimit,
          standardHeaders: 'draft-7',
          legacyHeaders: false,
          // Per client address and username, so one noisy client cannot lock a user out everywhere.
          keyGenerator: (req) => {
            const body = req.body as { username?: unknown } | undefined;
            const username = typeof body?.username === 'string' ? body.username.toLowerCase() : '';
            return `${ipKeyGenerator(req.ip ?? '')}|${username}`;
          },
          handler: (_req, _res, next, options) => {
            const retryAfter = Math.ceil(options.windowMs / 1000);
            next(new AppError('RATE_LIMITED', 'too many sign-in attempts, retry later', { retryAfter }));
          },
        })
      : (_req: unknown, _res: unknown, next: () => void) => next();

  router.post('/auth/login', limiter, async (req, res) => {
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
