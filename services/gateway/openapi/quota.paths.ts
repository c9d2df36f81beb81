/**
 * Quotas and version history (docs/ARCHITECTURE.md, "Quotas and usage" and "Versions"), merged into the
 * document by openapi.document.ts.
 */
import { contentHeaders, errorResponse, ID, idParam, json, LIMIT, OFFSET, ok, quotaExceeded, ref, response, TIMESTAMP } from './common';

const BYTES = { type: 'integer', minimum: 0 };


const fileParam = { name: 'id', in: 'path', required: true, description: 'the file id', schema: ID };
const versionParam = { name: 'versionId', in: 'path', required: true, description: 'the version id', schema: ID };
const notFound = errorResponse('the file is absent, deleted, a folder or another user’s, or the version is not one of its versions (NOT_FOUND)');

export const quotaTags = [
  { name: 'quotas', description: 'stored bytes and quotas' },
  { name: 'versions', description: 'the content a file had before it was replaced' },
];

export const quotaSchemas = {
  Usage: {
    type: 'object',
    required: ['quotaBytes', 'usedBytes', 'filesBytes', 'trashBytes', 'versionsBytes', 'uploadsBytes'],
    description: 'usedBytes is the sum of the four kinds; each is exact as soon as the request that changed it has answered',
    properties: {
      quotaBytes: { type: ['integer', 'null'], minimum: 0, description: 'null: no quota' },
      usedBytes: BYTES,
      filesBytes: { ...BYTES, description: 'content of active files' },
      trashBytes: { ...BYTES, description: 'content of files in the trash, until purged' },
      versionsBytes: { ...BYTES, description: 'content of kept versions' },
      uploadsBytes: { ...BYTES, description: 'declared Upload-Length of unfinished resumable uploads' },
    },
  },
  QuotaUpdate: {
    type: 'object',
    required: ['quotaBytes'],
    additionalProperties: false,
    properties: { quotaBytes: { type: ['integer', 'null'], minimum: 0, maximum: 9007199254740991 } },
  },
  Version: {
    type: 'object',
    required: ['id', 'size', 'sha256', 'mimeType', 'createdAt', 'replacedAt', 'deviceId'],
    properties: {
      id: ID,
      size: BYTES,
      sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      mimeType: { type: 'string' },
      createdAt: { ...TIMESTAMP, description: 'when this content was written' },
      replacedAt: { ...TIMESTAMP, description: 'when it stopped being the file’s content' },
      deviceId: { type: 'string', description: 'the device that wrote it; "" when unknown' },
    },
  },
  VersionPage: {
    type: 'object',
    required: ['items', 'total', 'limit', 'offset'],
    properties: { items: { type: 'array', items: ref('Version') }, total: BYTES, limit: BYTES, offset: BYTES },
  },
};

const usage = (operationId: string, summary: string, extra: object = {}) => ({
  get: {
    tags: ['quotas'],
    operationId,
    summary,
    ...extra,
    responses: {
      '200': ok('the quota and the stored bytes by kind', ref('Usage')),
      '401': response('Unauthorized'),
      '403': response('Forbidden'),
      '404': response('NotFound'),
      '503': response('Unavailable'),
    },
  },
});

export const quotaPaths = {
  '/v1/users/me/usage': usage('getMyUsage', 'The caller’s quota and stored bytes'),
  '/v1/users/{id}/usage': usage('getUserUsage', 'A user’s quota and stored bytes (administrators only)', { parameters: [idParam('user')] }),
  '/v1/files/{id}/versions': {
    get: {
      tags: ['versions'],
      operationId: 'listVersions',
      summary: 'A file’s versions, the most recently replaced first',
      description: 'Kept when PUT content, a resumable upload with fileId or a version restore replaces the content; purged after VERSION_RETENTION_DAYS, beyond MAX_VERSIONS per file, with the file’s purge, or to make room in the quota (oldest first).',
      parameters: [fileParam, LIMIT, OFFSET],
      responses: { '200': ok('one page of versions', ref('VersionPage')), '400': response('BadRequest'), '401': response('Unauthorized'), '404': notFound, '503': response('Unavailable') },
    },
  },
  '/v1/files/{id}/versions/{versionId}/content': {
    get: {
      tags: ['versions'],
      operationId: 'getVersionContent',
      summary: 'A version’s bytes, exactly like GET /files/{id}/content (Range, ETag, Repr-Digest)',
      parameters: [fileParam, versionParam, { name: 'Range', in: 'header', required: false, schema: { type: 'string' } }],
      responses: {
        '200': { description: 'the whole version', headers: contentHeaders(), content: { '*/*': { schema: { type: 'string', format: 'binary' } } } },
        '206': { description: 'the range asked for', headers: contentHeaders(), content: { '*/*': { schema: { type: 'string', format: 'binary' } } } },
        '302': {
          description: 'S3_DOWNLOADS=redirect, a whole-content GET without If-Match: `Location` is a presigned URL of the version’s object, as for GET /files/{id}/content',
          headers: { Location: { schema: { type: 'string', format: 'uri' } } },
        },
        '304': { description: 'If-None-Match names this version’s ETag' },
        '401': response('Unauthorized'),
        '404': notFound,
        '416': errorResponse('the range starts past the end (INVALID_REQUEST)'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/files/{id}/versions/{versionId}/restore': {
    post: {
      tags: ['versions'],
      operationId: 'restoreVersion',
      summary: 'Make a version’s bytes the file’s content again',
      description: 'A content replacement like PUT: new rev, a change-feed item with the caller’s device, the replaced content kept as a version; the restored version stays listed.',
      parameters: [fileParam, versionParam, { name: 'If-Match', in: 'header', required: false, description: '`"<sha256>"` of the current content', schema: { type: 'string' } }],
      responses: {
        '200': ok('the file after the restore', ref('File')),
        '401': response('Unauthorized'),
        '404': notFound,
        '412': errorResponse('If-Match does not hold (PRECONDITION_FAILED)'),
        '503': response('Unavailable'),
        '507': quotaExceeded,
      },
    },
  },
  '/v1/files/{id}/versions/{versionId}': {
    delete: {
      tags: ['versions'],
      operationId: 'deleteVersion',
      summary: 'Delete a version; its bytes are freed at once',
      parameters: [fileParam, versionParam],
      responses: { '204': { description: 'deleted' }, '401': response('Unauthorized'), '404': notFound, '503': response('Unavailable') },
    },
  },
};

/** PATCH /users/{id}, merged into the user administration path. */
export const setQuotaOperation = {
  tags: ['users'],
  operationId: 'setUserQuota',
  summary: 'Set or lift a user’s quota (administrators only)',
  description: 'A quota below what the user stores deletes nothing: writes that add bytes are refused from then on. Any body other than {"quotaBytes": <int >= 0> | null}: 400.',
  parameters: [idParam('user')],
  requestBody: { required: true, content: json(ref('QuotaUpdate')) },
  responses: {
    '200': ok('the user', ref('User')),
    '400': response('BadRequest'),
    '401': response('Unauthorized'),
    '403': response('Forbidden'),
    '404': response('NotFound'),
    '503': response('Unavailable'),
  },
};
