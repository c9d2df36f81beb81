import { ref, ID, TIMESTAMP, EPOCH_MS, INT64, NAME, PASSWORD, errorResponse } from './common';

/** Security scheme, shared responses and every schema the paths refer to. */
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
              enum: ['INVALID_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'NAME_CONFLICT', 'PRECONDITION_FAILED', 'FILE_TOO_LARGE', 'RATE_LIMITED', 'INTERNAL', 'SERVICE_UNAVAILABLE'],
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
    File: {
      type: 'object',
      required: ['id', 'name', 'size', 'mimeType', 'folderId', 'createdAt', 'updatedAt', 'rev'],
      description: [
        'A file created by a sync `create` op has no content until one is sent: no `sha256`, the `size` its creator',
        'declared (0 when none), and its content download answers 404. POST /files with `id` creates a file with its content in one step.',
      ].join(' '),
      properties: {
        id: ID,
        name: NAME,
        size: { type: 'integer', minimum: 0, description: 'bytes (declared by its creator while the file has no content)' },
        mimeType: { type: 'string', description: 'empty when none' },
        folderId: { anyOf: [ID, { const: '' }], description: 'empty at the root' },
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        rev: { type: 'integer', minimum: 1, description: '1 at creation, grows with every change' },
        sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'of the content; absent while the file has none' },
      },
    },
    Folder: {
      type: 'object',
      required: ['id', 'name', 'parentId', 'createdAt', 'updatedAt', 'rev'],
      properties: {
        id: ID,
        name: NAME,
        parentId: { anyOf: [ID, { const: '' }], description: 'empty at the root' },
        createdAt: TIMESTAMP,
        updatedAt: TIMESTAMP,
        rev: { type: 'integer', minimum: 1, description: '1 at creation, grows with every change' },
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
      description: [
        'resourceId is required for create, update, move and delete. A malformed op fails at its place in the batch.',
        'opId is best sent as a decimal string: it is echoed exactly as sent, and JSON numbers above 2^53 lose digits in most parsers.',
      ].join(' '),
      properties: {
        opId: INT64,
        baseRev: {
          type: 'integer',
          minimum: 1,
          description: [
            'update, move and delete only: the rev the client last saw. When the caller has the resource (active or deleted) at another',
            'rev, the op fails with PRECONDITION_FAILED and details {"rev", "deleted"}, and the batch stops there. Without it the op',
            'applies whatever changed meanwhile. Not a positive integer: INVALID_REQUEST at its place in the batch.',
          ].join(' '),
        },
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
      required: ['opId', 'type', 'resourceId', 'outcome', 'rev'],
      properties: {
        opId: INT64,
        type: { type: 'string' },
        resourceId: { type: ['string', 'null'] },
        rev: {
          type: ['integer', 'null'],
          minimum: 1,
          description: [
            'the resource\'s rev right after the op (for a duplicate, its rev now); null when the op names no resource or the caller has',
            'no such resource. One above the op\'s baseRev (0 for a create): nothing else changed it in between, and the change feed item',
            'with this rev and the device\'s id is the device\'s own change.',
          ].join(' '),
        },
        outcome: {
          type: 'string',
          enum: ['applied', 'noop', 'duplicate'],
          description: '`applied` changed state; `noop` per SPEC 4.10 rules 3-6; `duplicate` this device already processed that opId',
        },
      },
    },
    FailedOp: {
      type: 'object',
      required: ['opId', 'type', 'resourceId', 'rev', 'error'],
      properties: {
        opId: { anyOf: [INT64, { type: 'null' }] },
        type: { type: ['string', 'null'] },
        resourceId: { type: ['string', 'null'] },
        rev: { type: ['integer', 'null'], minimum: 1, description: 'the resource\'s rev as of the failure, null when the caller has no such resource' },
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: { type: 'string' },
            message: { type: 'string' },
            details: {
              description: 'with PRECONDITION_FAILED (a stale baseRev): {"rev": <current>, "deleted": <bool>}',
              type: 'object',
              properties: { rev: { type: 'integer', minimum: 1 }, deleted: { type: 'boolean' } },
            },
          },
        },
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
      required: ['id', 'type', 'name', 'parentId', 'updatedAt', 'rev', 'effectiveAccess'],
      properties: {
        id: ID,
        type: { type: 'string', enum: ['file', 'folder'] },
        name: { type: 'string' },
        parentId: { anyOf: [ID, { const: '' }] },
        updatedAt: EPOCH_MS,
        rev: { type: 'integer', minimum: 1, description: '1 at creation, grows with every change' },
        effectiveAccess: { const: 'owner' },
      },
    },
    Change: {
      type: 'object',
      required: ['id', 'type', 'name', 'parentId', 'deleted', 'rev', 'updatedAt', 'deviceId'],
      description: 'a resource as of the response; size, mimeType and sha256 for files only (sha256 once it has content)',
      properties: {
        id: ID,
        type: { type: 'string', enum: ['file', 'folder'] },
        name: NAME,
        parentId: { anyOf: [ID, { const: '' }], description: 'empty at the root' },
        deleted: { type: 'boolean' },
        rev: { type: 'integer', minimum: 1, description: '1 at creation, grows with every change' },
        updatedAt: TIMESTAMP,
        deviceId: {
          anyOf: [ID, { const: '' }],
          description: [
            'the device whose request made the resource\'s latest change (a sync op, an upload, a content replacement, a delete, a',
            'restore or a purge through the API); empty when no device made it (the scheduled purge). A client skips items whose',
            'deviceId is its own and whose rev it already holds.',
          ].join(' '),
        },
        size: { type: 'integer', minimum: 0 },
        mimeType: { type: 'string' },
        sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      },
    },
    ChangePage: {
      type: 'object',
      required: ['items', 'cursor', 'hasMore'],
      properties: {
        items: { type: 'array', maxItems: 1000, items: ref('Change') },
        cursor: { type: 'string', description: 'opaque; pass it back to continue' },
        hasMore: { type: 'boolean', description: 'more changes are ready now' },
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
};
