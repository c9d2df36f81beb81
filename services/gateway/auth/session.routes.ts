import { Router, type RequestHandler } from 'express';
import Joi from 'joi';
import { validateBody } from '../http/request';
import { principalOf, type requireUser } from './auth.middleware';
import { browserDeviceName } from './browser.device';
import { clearSessionCookie, refuseCrossOrigin, sessionCookie, setSessionCookie } from './session.cookie';
import type { SessionService, SignedIn } from './session.service';

const signInSchema = Joi.object({
  username: Joi.string().min(1).max(255).required(),
  password: Joi.string().min(1).max(1024).required(),
});

const view = ({ token: _cookieOnly, ...session }: SignedIn) => session;

/**
 * The web app's session (docs/WEBAPP.md): POST /v1/session signs in and sets the HttpOnly cookie,
 * GET /v1/session tells who is signed in (and renews the cookie), DELETE /v1/session signs out.
 * `limits` are the sign-in limits of POST /v1/auth/login, counted in the same buckets.
 */
export function sessionRoutes(
  sessions: SessionService,
  limits: RequestHandler[],
  authenticated: ReturnType<typeof requireUser>,
  publicUrl: string | undefined,
): Router {
  const router = Router();
  // A sign-in form posted from another site would sign the victim into the attacker's account.
  const sameOrigin: RequestHandler = (req, _res, next) => {
    refuseCrossOrigin(req, publicUrl);
    next();
  };

  router.post('/session', sameOrigin, ...limits, async (req, res) => {
    const body = validateBody(signInSchema, req.body);
    const session = await sessions.signIn(body.username, body.password, browserDeviceName(req.get('user-agent')), sessionCookie(req));
    setSessionCookie(req, res, session.token);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json(view(session));
  });

  router.get('/session', authenticated, async (req, res) => {
    const principal = principalOf(req);
    const session = await sessions.renew(principal.userId, principal.deviceId);
    // Only a cookie session is renewed; a Bearer client keeps managing its own token.
    if (!req.headers.authorization && sessionCookie(req)) setSessionCookie(req, res, session.token);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json(view(session));
  });

  router.delete('/session', authenticated, async (req, res) => {
    const principal = principalOf(req);
    await sessions.signOut(principal.userId, principal.deviceId);
    clearSessionCookie(req, res);
    res.status(204).end();
  });

  return router;
}
