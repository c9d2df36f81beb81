import { ref, errorResponse } from './common';
import { accountSchemas } from './accounts.schemas';
import { fileSchemas } from './files.schemas';
import { syncSchemas } from './sync.schemas';

/** Security scheme, shared responses, the error schemas, and every area's schemas the paths refer to. */
export const components = {
  securitySchemes: {
    bearerAuth: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'HS256 with `sub` (user id), `device_id`, `iat` and `exp` (7 days), from POST /v1/auth/login',
    },
  },
  responses: {
    BadRequest: errorResponse('malformed or invalid request (INVALID_REQUEST)'),
    BodyTooLarge: errorResponse('JSON body over 1 MiB (413, INVALID_REQUEST)'),
    Unauthorized: errorResponse('missing, invalid or expired token, or its user or device was deleted (UNAUTHORIZED)'),
    Forbidden: errorResponse('administrators only (FORBIDDEN)'),
    NotFound: errorResponse('absent, deleted or not owned (NOT_FOUND)'),
    NameConflict: errorResponse('a sibling has that name (NAME_CONFLICT)'),
    RateLimited: errorResponse('too many attempts (RATE_LIMITED)', true),
    Unavailable: errorResponse('MySQL or Redis unreachable, or overloaded (SERVICE_UNAVAILABLE)', true),
    ContentConflict: {
      description: 'a precondition on the content does not hold (PRECONDITION_FAILED); nothing changes. `details` is the file\'s current state',
      content: { 'application/json': { schema: ref('ContentConflict') } },
    },
  },
  schemas: {
    Error: {
      type: 'object',
      required: ['error'],
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: {
              type: 'string',
              enum: ['INVALID_REQUEST', 'UNAUTHORIZED', 'PASSWORD_REQUIRED', 'FORBIDDEN', 'NOT_FOUND', 'NAME_CONFLICT', 'PRECONDITION_FAILED', 'FILE_TOO_LARGE', 'RATE_LIMITED', 'INTERNAL', 'SERVICE_UNAVAILABLE'],
            },
            message: { type: 'string' },
            details: {},
          },
        },
      },
    },
    ContentConflict: {
      type: 'object',
      required: ['error'],
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message', 'details'],
          properties: {
            code: { const: 'PRECONDITION_FAILED' },
            message: { type: 'string' },
            details: {
              type: 'object',
              required: ['rev', 'sha256'],
              description: 'the file as it is now, so a conflict is resolved without another request',
              properties: {
                rev: { type: 'integer', minimum: 1 },
                sha256: { type: ['string', 'null'], pattern: '^[0-9a-f]{64}$', description: 'null while the file has no content' },
              },
            },
          },
        },
      },
    },
    ...fileSchemas,
    ...accountSchemas,
    ...syncSchemas,
  },
};
