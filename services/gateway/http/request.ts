import type { Request } from 'express';
import type Joi from 'joi';
import { invalid } from '../../../shared/errors';

/** A query parameter given at most once, as a plain string; repeated or nested values are rejected. */
export function queryString(req: Request, name: string): string | undefined {
  const value = (req.query as Record<string, unknown>)[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(`query parameter ${name} must be given once, as a plain value`);
  return value;
}

function queryInteger(req: Request, name: string, fallback: number, min: number): number {
  const raw = queryString(req, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw invalid(`${name} must be an integer`);
  // Any run of digits is an integer (a huge limit is clamped, not refused); past 2^53 nothing is left to page.
  const n = Math.min(Number(raw), Number.MAX_SAFE_INTEGER);
  if (n < min) throw invalid(`${name} must be at least ${min}`);
  return n;
}

export const MAX_PAGE = 1000;

/** Paging as the OpenAPI description gives it: limit 1..1000 (larger is clamped), default 50; offset >= 0. */
export function paging(req: Request): { limit: number; offset: number } {
  const limit = Math.min(queryInteger(req, 'limit', 50, 1), MAX_PAGE);
  const offset = queryInteger(req, 'offset', 0, 0);
  return { limit, offset };
}

/** Validates a JSON body against a Joi schema; the first failure names the field. */
export function validateBody<T>(schema: Joi.ObjectSchema<T>, body: unknown): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('request body must be a JSON object');
  const { value, error } = schema.validate(body, { abortEarly: true, convert: false, stripUnknown: true });
  if (error) {
    const detail = error.details[0];
    throw invalid(error.message, detail ? { field: detail.path.join('.') } : undefined);
  }
  return value;
}

export function singleParam(req: Request, name: string): string {
  const value = req.params[name];
  return typeof value === 'string' ? value : '';
}
