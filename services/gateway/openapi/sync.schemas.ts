import { ref, ID, TIMESTAMP, EPOCH_MS, INT64, NAME } from './common';

/** Schemas of sync: the ops batch and its result, the change feed and the permission snapshot. */
export const syncSchemas = {
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
        description: '`applied` changed state; `noop` nothing to do (docs/SYNC-CLIENT.md, section 4); `duplicate` this device already processed that opId',
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
};
