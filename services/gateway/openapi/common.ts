import { reprDigestHeader } from './content.paths';
/** Building blocks shared by every area of the OpenAPI description. */

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const response = (name: string) => ({ $ref: `#/components/responses/${name}` });
export const json = (schema: object) => ({ 'application/json': { schema } });
export const ok = (description: string, schema: object) => ({ description, content: json(schema) });

export const ID = { type: 'string', pattern: '^[0-9a-f]{32}$', description: '32 lowercase hex characters from a CSPRNG', examples: ['5f0c2a9d8e7b6a5f4e3d2c1b0a998877'] };
export const TIMESTAMP = { type: 'string', format: 'date-time', description: 'ISO-8601 UTC with milliseconds', examples: ['2026-11-21T10:00:00.123Z'] };
export const EPOCH_MS = { type: 'integer', minimum: 0, description: 'epoch milliseconds' };
/** 64-bit signed integers travel as JSON numbers or decimal strings and are echoed exactly as sent. */
export const INT64 = {
  oneOf: [
    { type: 'integer', format: 'int64' },
    { type: 'string', pattern: '^-?[0-9]{1,19}$' },
  ],
};
export const NAME = { type: 'string', minLength: 1, maxLength: 255, description: 'NFC-normalised; no "/", no control character, not "." or ".."' };
export const PASSWORD = { type: 'string', minLength: 8, maxLength: 1024, format: 'password' };

export const idParam = (what: string) => ({ name: 'id', in: 'path', required: true, description: `the ${what} id`, schema: ID });
export const LIMIT = {
  name: 'limit',
  in: 'query',
  description: 'page size, default 50; values above 1000 are clamped to 1000; 0, negative or non-integer: 400',
  schema: { type: 'integer', minimum: 1, default: 50 },
};
export const OFFSET = { name: 'offset', in: 'query', description: 'rows skipped, default 0', schema: { type: 'integer', minimum: 0, default: 0 } };

export const errorResponse = (description: string, retryAfter = false) => ({
  description,
  ...(retryAfter ? { headers: { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } } } : {}),
  content: json(ref('Error')),
});

/** The 507 of every write that adds bytes (docs/ARCHITECTURE.md, "Quotas and usage"). */
export const quotaExceeded = errorResponse(
  'the write does not fit in the quota even with no version left (QUOTA_EXCEEDED); details: {quotaBytes, usedBytes (before the write), neededBytes}; nothing of it is kept',
);

export const health = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string' }, mysql: { type: 'boolean' }, redis: { type: 'boolean' }, storage: { type: 'boolean' } },
};

export function contentHeaders() {
  return {
    'Content-Length': { schema: { type: 'integer' } },
    ETag: { description: '`"<sha256>"`, what If-Match of PUT content compares with', schema: { type: 'string' } },
    ...reprDigestHeader,
    'Accept-Ranges': { schema: { const: 'bytes' } },
    'Content-Disposition': { description: 'attachment, with the file name safely encoded', schema: { type: 'string' } },
  };
}
