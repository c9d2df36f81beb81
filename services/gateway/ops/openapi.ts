/**
 * The OpenAPI 3.1 description of the HTTP contract (/work/shared/API.md), served at /v1/openapi.json
 * and browsable at /docs. A test walks the Express app and fails when a route is missing here or
 * described here without being served, so the two cannot drift apart silently.
 */

import { uploadPaths } from './openapi/uploads';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const response = (name: string) => ({ $ref: `#/components/responses/${name}` });
const json = (schema: object) => ({ 'application/json': { schema } });
const ok = (description: string, schema: object) => ({ description, content: json(schema) });

const ID = { type: 'string', pattern: '^[0-9a-f]{32}$', description: '32 lowercase hex characters from a CSPRNG', examples: ['5f0c2a9d8e7b6a5f4e3d2c1b0a998877'] };
const TIMESTAMP = { type: 'string', format: 'date-time', description: 'ISO-8601 UTC with milliseconds', examples: ['2026-11-21T10:00:00.123Z'] };
const EPOCH_MS = { type: 'integer', minimum: 0, description: 'epoch milliseconds' };
/** 64-bit signed integers travel as JSON numbers or decimal strings and are echoed exactly as sent. */
const INT64 = {
  oneOf: [
    { type: 'integer', format: 'int64' },
    { type: 'string', pattern: '^-?[0-9]{1,19}$' },
  ],
};
const NAME = { type: 'string', minLength: 1, maxLength: 255, description: 'NFC-normalised; no "/", no control character, not "." or ".."' };
const PASSWORD = { type: 'string', minLength: 8, maxLength: 1024, format: 'password' };

const idParam = (what: string) => ({ name: 'id', in: 'path', required: true, description: `the ${what} id`, schema: ID });
const LIMIT = {
  name: 'limit',
  in: 'query',
  description: 'page size, default 50; values above 1000 are clamped to 1000; 0, negative or non-integer: 400',
  schema: { type: 'integer', minimum: 1, default: 50 },
};
const OFFSET = { name: 'offset', in: 'query', description: 'rows skipped, default 0', schema: { type: 'integer', minimum: 0, default: 0 } };

const errorResponse = (description: string, retryAfter = false) => ({
  description,
  ...(retryAfter ? { headers: { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } } } : {}),
  content: json(ref('Error')),
});

const health = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string' }, mysql: { type: 'boolean' }, redis: { type: 'boolean' } },
};

export const openapiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'filesync',
    version: '1.0.0',
    summary: 'File storage and sync: per-user files and folders, uploads, search, device outbox sync, permission snapshot.',
    description: [
      'Version 1 of the HTTP contract. Everything lives under `/v1` except the operations endpoints',
      '(`/healthz`, `/readyz`, `/metrics`), this description (`/docs`) and the BullMQ dashboard',
      '(`/admin/queues`, administrators only, by Bearer token or HTTP Basic).',
      '',
      'Every error is `{"error": {"code", "message"}}` with an optional `details`; unknown routes give 404 NOT_FOUND.',
      'A JSON body over 1 MiB gives 413 INVALID_REQUEST, malformed JSON 400 INVALID_REQUEST.',
      'Every response carries `X-Request-Id` (the one the client sent when it is well-formed, else a new one);',
      'it also appears in the gateway and worker logs of that request.',
    ].join('\n'),
    license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
  },
  servers: [{ url: '/', description: 'this gateway' }],
  security: [{ bearerAuth: [] }],
  tags: [
    { name: 'auth', description: 'devices, sign-in, passwords' },
    { name: 'users', description: 'user administration and lookup' },
    { name: 'files', description: 'files, folders and their content' },
    { name: 'sync', description: 'outbox synchronisation and the permission snapshot' },
    { name: 'uploads', description: 'resumable uploads over tus 1.0.0' },
    { name: 'operations', description: 'health, readiness, metrics and this description' },
  ],
  paths: {
    ...uploadPaths,
    '/v1/devices': {
      post: {
        tags: ['auth'],
        operationId: 'registerDevice',
        summary: 'Register a device',
        security: [],
        requestBody: { required: true, content: json(ref('DeviceRegistration')) },
        responses: {
          '201': ok('the device record', ref('Device')),
          '400': response('BadRequest'),
          '413': response('BodyTooLarge'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/auth/login': {
      post: {
        tags: ['auth'],
        operationId: 'login',
        summary: 'Sign in on a registered device',
        description: 'Unknown user, deleted user and wrong password give the same 401, in the same time.',
        security: [],
        requestBody: { required: true, content: json(ref('LoginRequest')) },
        responses: {
          '200': ok('a token binding the user and the device, valid 7 days', ref('LoginResponse')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '413': response('BodyTooLarge'),
          '429': response('RateLimited'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/users/me/password': {
      patch: {
        tags: ['auth'],
        operationId: 'changePassword',
        summary: 'Change the caller’s password',
        description: 'Existing tokens stay valid (SPEC 5.6).',
        requestBody: { required: true, content: json(ref('PasswordChange')) },
        responses: {
          '204': { description: 'changed' },
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '403': errorResponse('current_password is wrong (FORBIDDEN)'),
          '413': response('BodyTooLarge'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/users/resolve': {
      get: {
        tags: ['users'],
        operationId: 'resolveUser',
        summary: 'Find a user by exact (lowercase) username',
        parameters: [{ name: 'username', in: 'query', required: true, schema: { type: 'string', minLength: 1 } }],
        responses: {
          '200': ok('the user; never the e-mail or the admin flag', ref('UserRef')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '404': response('NotFound'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/users': {
      post: {
        tags: ['users'],
        operationId: 'createUser',
        summary: 'Create a user (administrators only)',
        requestBody: { required: true, content: json(ref('UserCreation')) },
        responses: {
          '201': ok('the new user', ref('User')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '403': response('Forbidden'),
          '409': errorResponse('the username exists, ignoring case (NAME_CONFLICT)'),
          '413': response('BodyTooLarge'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/users/{id}': {
      delete: {
        tags: ['users'],
        operationId: 'deleteUser',
        summary: 'Delete a user (administrators only); its tokens stop working',
        parameters: [idParam('user')],
        responses: {
          '204': { description: 'deleted' },
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '403': response('Forbidden'),
          '404': response('NotFound'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/files': {
      get: {
        tags: ['files'],
        operationId: 'listFiles',
        summary: 'List the caller’s files in a folder (the root when folderId is absent or empty)',
        parameters: [
          { name: 'folderId', in: 'query', schema: { anyOf: [ID, { const: '' }] } },
          LIMIT,
          OFFSET,
          {
            name: 'sort',
            in: 'query',
            description: '`added_at` sorts on created_at; any other value sorts on created_at',
            schema: { type: 'string', enum: ['size', 'created_at', 'updated_at', 'added_at'], default: 'created_at' },
          },
          { name: 'order', in: 'query', description: '`asc` ascending, anything else descending', schema: { type: 'string', default: 'desc' } },
        ],
        responses: {
          '200': ok('a page of files; the resource id breaks ties', ref('FilePage')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '404': response('NotFound'),
          '503': response('Unavailable'),
        },
      },
      post: {
        tags: ['files'],
        operationId: 'uploadFile',
        summary: 'Upload a file',
        description:
          'Content is stored under `<UPLOAD_DIR>/<deviceId>/<resourceId>[.<ext>]`. Over the size limit nothing remains on disk.',
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['file'],
                properties: {
                  file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'exactly one file part' },
                  folderId: { ...ID, description: 'the parent folder; root when absent' },
                  id: { ...ID, description: 'a client-chosen id not used by any resource' },
                  name: { ...NAME, description: 'defaults to the uploaded file name' },
                },
              },
            },
          },
        },
        responses: {
          '201': ok('the stored file', ref('File')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '404': response('NotFound'),
          '409': response('NameConflict'),
          '413': errorResponse('larger than MAX_UPLOAD_BYTES (FILE_TOO_LARGE)'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/files/search': {
      get: {
        tags: ['files'],
        operationId: 'searchFiles',
        summary: 'Search the caller’s files by name substring, case-insensitively; `%`, `_` and `\\` are literal',
        parameters: [{ name: 'q', in: 'query', required: true, schema: { type: 'string', minLength: 1, maxLength: 255 } }, LIMIT, OFFSET],
        responses: {
          '200': ok('a page of files, name ascending', ref('FilePage')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/files/{id}': {
      get: {
        tags: ['files'],
        operationId: 'getFile',
        summary: 'One file',
        parameters: [idParam('file')],
        responses: {
          '200': ok('the file', ref('File')),
          '401': response('Unauthorized'),
          '404': response('NotFound'),
          '503': response('Unavailable'),
        },
      },
      delete: {
        tags: ['files'],
        operationId: 'deleteFile',
        summary: 'Soft-delete a file',
        parameters: [idParam('file')],
        responses: {
          '200': ok('the deleted file’s id', { type: 'object', required: ['id'], properties: { id: ID } }),
          '401': response('Unauthorized'),
          '404': response('NotFound'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/files/{id}/content': {
      get: {
        tags: ['files'],
        operationId: 'getFileContent',
        summary: 'The stored bytes, whole or a range',
        parameters: [
          idParam('file'),
          { name: 'Range', in: 'header', description: 'one byte range, `bytes=<start>-<end>`', schema: { type: 'string' } },
        ],
        responses: {
          '200': { description: 'the whole content', headers: contentHeaders(), content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
          '206': { description: 'the requested range', headers: contentHeaders(), content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
          '400': errorResponse('a Range that cannot be satisfied (INVALID_REQUEST)'),
          '401': response('Unauthorized'),
          '404': errorResponse('absent, deleted, not owned, a folder, or a file created by sync with no content yet'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/folders': {
      get: {
        tags: ['files'],
        operationId: 'listFolders',
        summary: 'The caller’s folders in a parent (the root when parentId is absent or empty), name ascending',
        parameters: [{ name: 'parentId', in: 'query', schema: { anyOf: [ID, { const: '' }] } }],
        responses: {
          '200': ok('the folders', ref('FolderList')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '404': response('NotFound'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/sync/ops': {
      post: {
        tags: ['sync'],
        operationId: 'applySyncOps',
        summary: 'Apply a batch of outbox operations for the token’s device',
        description: [
          'Ops apply in batch order and stop at the first failing one (SPEC 4.10). Batches of one device apply one at a',
          'time in the order they were accepted; an op this device already processed is reported as `duplicate`.',
          'The body is parsed without loss: 64-bit opIds are echoed exactly as sent. Retrying a batch is safe.',
        ].join(' '),
        requestBody: { required: true, content: json(ref('SyncRequest')) },
        responses: {
          '200': ok('what was applied, and the failing op if any', ref('SyncResponse')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '413': response('BodyTooLarge'),
          '503': errorResponse('no result within the sync timeout, or Redis unreachable; retry the batch', true),
        },
      },
    },
    '/v1/sync/permissions': {
      get: {
        tags: ['sync'],
        operationId: 'permissionSnapshot',
        summary: 'The caller’s active resources changed after `after`, newest first',
        parameters: [{ name: 'after', in: 'query', description: 'epoch milliseconds, default 0 (everything)', schema: { ...EPOCH_MS, default: 0 } }],
        responses: {
          '200': ok('at most 10000 items, updatedAt descending then id', ref('Snapshot')),
          '400': response('BadRequest'),
          '401': response('Unauthorized'),
          '503': response('Unavailable'),
        },
      },
    },
    '/v1/openapi.json': {
      get: {
        tags: ['operations'],
        operationId: 'openapi',
        summary: 'This description',
        security: [],
        responses: { '200': ok('the OpenAPI 3.1 document', { type: 'object' }) },
      },
    },
    '/healthz': {
      get: {
        tags: ['operations'],
        operationId: 'healthz',
        summary: 'Liveness: 200 while the process runs',
        security: [],
        responses: { '200': ok('alive', health) },
      },
    },
    '/readyz': {
      get: {
        tags: ['operations'],
        operationId: 'readyz',
        summary: 'Readiness: 200 when MySQL and Redis answer, else 503',
        security: [],
        responses: {
          '200': ok('ready', health),
          '503': errorResponse('MySQL or Redis does not answer; details say which', true),
        },
      },
    },
    '/metrics': {
      get: {
        tags: ['operations'],
        operationId: 'metrics',
        summary: 'Prometheus metrics of this gateway process',
        security: [],
        responses: {
          '200': { description: 'the Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } },
        },
      },
    },
  },
  components: {
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
                enum: ['INVALID_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'NAME_CONFLICT', 'FILE_TOO_LARGE', 'RATE_LIMITED', 'INTERNAL', 'SERVICE_UNAVAILABLE'],
              },
              message: { type: 'string' },
              details: {},
            },
          },
        },
      },
      File: {
        type: 'object',
        required: ['id', 'name', 'size', 'mimeType', 'folderId', 'createdAt', 'updatedAt'],
        properties: {
          id: ID,
          name: NAME,
          size: { type: 'integer', minimum: 0, description: 'bytes' },
          mimeType: { type: 'string', description: 'empty when none' },
          folderId: { anyOf: [ID, { const: '' }], description: 'empty at the root' },
          createdAt: TIMESTAMP,
          updatedAt: TIMESTAMP,
          sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'of the content, once uploaded' },
        },
      },
      Folder: {
        type: 'object',
        required: ['id', 'name', 'parentId', 'createdAt', 'updatedAt'],
        properties: {
          id: ID,
          name: NAME,
          parentId: { anyOf: [ID, { const: '' }], description: 'empty at the root' },
          createdAt: TIMESTAMP,
          updatedAt: TIMESTAMP,
        },
      },
      Page: {
        type: 'object',
        required: ['items', 'total', 'limit', 'offset'],
        properties: {
          items: { type: 'array', description: 'never null' },
          total: { type: 'integer', minimum: 0, description: 'all matches, whatever limit and offset' },
          limit: { type: 'integer', minimum: 1, maximum: 1000 },
          offset: { type: 'integer', minimum: 0 },
        },
      },
      FilePage: { allOf: [ref('Page'), { type: 'object', properties: { items: { type: 'array', items: ref('File') } } }] },
      FolderList: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: ref('Folder') } } },
      DeviceRegistration: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string', minLength: 1, maxLength: 100 }, platform: { type: ['string', 'null'], maxLength: 50 } },
      },
      Device: {
        type: 'object',
        required: ['id', 'name', 'platform', 'createdAt'],
        properties: { id: ID, name: { type: 'string' }, platform: { type: ['string', 'null'] }, createdAt: TIMESTAMP },
      },
      LoginRequest: {
        type: 'object',
        required: ['username', 'password', 'deviceId'],
        properties: { username: { type: 'string', minLength: 1 }, password: { type: 'string', minLength: 1, format: 'password' }, deviceId: ID },
      },
      LoginResponse: {
        type: 'object',
        required: ['token', 'tokenType', 'expiresAt', 'user', 'deviceId'],
        properties: {
          token: { type: 'string' },
          tokenType: { const: 'Bearer' },
          expiresAt: TIMESTAMP,
          user: ref('UserRef'),
          deviceId: ID,
        },
      },
      PasswordChange: {
        type: 'object',
        required: ['current_password', 'new_password'],
        properties: { current_password: { type: 'string', minLength: 1, format: 'password' }, new_password: PASSWORD },
      },
      UserRef: { type: 'object', required: ['id', 'username'], properties: { id: ID, username: { type: 'string' } } },
      UserCreation: {
        type: 'object',
        required: ['username', 'password'],
        properties: {
          username: { type: 'string', pattern: '^[A-Za-z0-9._-]{3,64}$' },
          password: PASSWORD,
          email: { type: ['string', 'null'], format: 'email' },
          isAdmin: { type: 'boolean', default: false },
        },
      },
      User: {
        type: 'object',
        required: ['id', 'username', 'email', 'isAdmin', 'createdAt'],
        properties: { id: ID, username: { type: 'string' }, email: { type: ['string', 'null'] }, isAdmin: { type: 'boolean' }, createdAt: TIMESTAMP },
      },
      SyncOp: {
        type: 'object',
        required: ['opId', 'type'],
        description: 'resourceId is required for create, update, move and delete. A malformed op fails at its place in the batch.',
        properties: {
          opId: INT64,
          type: { type: 'string', enum: ['create', 'update', 'move', 'delete', 'share', 'share_link'] },
          resourceId: ID,
          refType: { type: ['string', 'null'] },
          refId: { anyOf: [INT64, { type: 'null' }] },
          payload: {
            description: 'create: CreatePayload; update: {"name"}; move: {"parentId"}; others: any object',
            anyOf: [ref('CreatePayload'), { type: 'object' }, { type: 'null' }],
          },
        },
      },
      CreatePayload: {
        type: 'object',
        required: ['resourceType', 'name'],
        properties: {
          resourceType: { type: 'string', enum: ['file', 'folder'] },
          name: NAME,
          parentId: { anyOf: [ID, { type: 'null' }] },
          size: { type: 'integer', minimum: 0, description: 'files only' },
          mimeType: { type: 'string', description: 'files only' },
        },
      },
      SyncRequest: {
        type: 'object',
        required: ['ops'],
        properties: { ops: { type: 'array', minItems: 1, maxItems: 1000, items: ref('SyncOp') } },
      },
      AppliedOp: {
        type: 'object',
        required: ['opId', 'type', 'resourceId', 'outcome'],
        properties: {
          opId: INT64,
          type: { type: 'string' },
          resourceId: { type: ['string', 'null'] },
          outcome: {
            type: 'string',
            enum: ['applied', 'noop', 'duplicate'],
            description: '`applied` changed state; `noop` per SPEC 4.10 rules 3-6; `duplicate` this device already processed that opId',
          },
        },
      },
      FailedOp: {
        type: 'object',
        required: ['opId', 'type', 'resourceId', 'error'],
        properties: {
          opId: { anyOf: [INT64, { type: 'null' }] },
          type: { type: ['string', 'null'] },
          resourceId: { type: ['string', 'null'] },
          error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} } },
        },
      },
      SyncResponse: {
        type: 'object',
        required: ['applied', 'failed'],
        properties: {
          applied: { type: 'array', items: ref('AppliedOp'), description: 'every op before the failing one, in batch order' },
          failed: { anyOf: [ref('FailedOp'), { type: 'null' }] },
        },
      },
      SnapshotItem: {
        type: 'object',
        required: ['id', 'type', 'name', 'parentId', 'updatedAt', 'effectiveAccess'],
        properties: {
          id: ID,
          type: { type: 'string', enum: ['file', 'folder'] },
          name: { type: 'string' },
          parentId: { anyOf: [ID, { const: '' }] },
          updatedAt: EPOCH_MS,
          effectiveAccess: { const: 'owner' },
        },
      },
      Snapshot: {
        type: 'object',
        required: ['items', 'cachedAt', 'truncated'],
        properties: {
          items: { type: 'array', maxItems: 10000, items: ref('SnapshotItem') },
          cachedAt: EPOCH_MS,
          truncated: { type: 'boolean', description: 'more than 10000 matched' },
        },
      },
    },
  },
} as const;

function contentHeaders() {
  return {
    'Content-Length': { schema: { type: 'integer' } },
    ETag: { schema: { type: 'string' } },
    'Accept-Ranges': { schema: { const: 'bytes' } },
    'Content-Disposition': { description: 'attachment, with the file name safely encoded', schema: { type: 'string' } },
  };
}
