import { ref, response, json, ok, EPOCH_MS, errorResponse } from './common';

/** Outbox synchronisation, the permission snapshot and the change feed. */
export const syncPaths = {
  '/v1/sync/ops': {
    post: {
      tags: ['sync'],
      operationId: 'applySyncOps',
      summary: 'Apply a batch of outbox operations for the token’s device',
      description: [
        'Ops apply in batch order and stop at the first failing one (docs/SYNC-CLIENT.md, section 4). Batches of one device apply one at a',
        'time in the order they were accepted; an op this device already processed is reported as `duplicate`.',
        'The body is parsed without loss: 64-bit opIds are echoed exactly as sent (send them as strings). Retrying a batch is safe.',
        'Every result carries the resource\'s rev after the op; update, move and delete may carry baseRev to apply only while',
        'the resource is still at that rev (else PRECONDITION_FAILED with details {rev, deleted}, and the batch stops there).',
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
  '/v1/sync/changes': {
    get: {
      tags: ['sync'],
      operationId: 'changeFeed',
      summary: 'Resources the caller changed since a cursor, in commit order, with long poll',
      description: [
        'Each resource appears at most once per response, at its state as of the response. Without `cursor` the feed starts',
        'at the beginning and leaves out resources already deleted; with one, every resource changed since appears, deleted ones',
        'with `deleted: true`. Pass back each response\'s `cursor`: nothing is skipped and no unchanged resource repeats,',
        'whichever gateway or worker committed the change. `hasMore` true: ask again at once. With `wait` and nothing new, the',
        'request is held until a change of the caller commits anywhere, or answers after `wait` seconds with no items and the same cursor.',
        'Every item carries the deviceId of the device whose request made its latest change (empty for the scheduled purge).',
      ].join(' '),
      parameters: [
        { name: 'cursor', in: 'query', description: 'opaque, from a previous response of this user; absent: from the beginning', schema: { type: 'string' } },
        { name: 'limit', in: 'query', description: 'default 500; above 1000 clamped to 1000; 0, negative or non-integer: 400', schema: { type: 'integer', minimum: 1, default: 500 } },
        { name: 'wait', in: 'query', description: 'seconds to hold the request while nothing changed, 0 to 60', schema: { type: 'integer', minimum: 0, maximum: 60, default: 0 } },
      ],
      responses: {
        '200': ok('changes in commit order', ref('ChangePage')),
        '400': errorResponse('bad limit or wait, or a cursor this service did not issue to the caller (INVALID_REQUEST)'),
        '401': response('Unauthorized'),
        '429': errorResponse('too many held requests of this user on this gateway (RATE_LIMITED)', true),
        '503': response('Unavailable'),
      },
    },
  },
};
