/**
 * The trash part of the OpenAPI description (docs/ARCHITECTURE.md, "The trash"), merged into the
 * document by openapi.document.ts. It refers to the shared components (File, Folder, Page, the error responses) by name.
 */
import { ID, json, ref as schema, response } from './common';

const idParam = { name: 'id', in: 'path', required: true, description: 'the deleted resource’s id', schema: ID };
const notInTrash = {
  description: 'not in the caller’s trash: active, purged, absent, another user’s, or a malformed id (NOT_FOUND)',
  content: json(schema('Error')),
};

export const trashTag = { name: 'trash', description: 'deleted resources: list, restore, purge' };

export const trashPaths = {
  '/v1/trash': {
    get: {
      tags: ['trash'],
      operationId: 'listTrash',
      summary: 'The caller’s deleted resources that can still be restored, newest deletion first',
      description: [
        'Every deleted resource not yet purged, the contents of a deleted folder included (each can be restored on its',
        'own). Sorted by `deletedAt` descending, then id. Resources deleted more than `TRASH_RETENTION_DAYS` ago are',
        'purged by a scheduled job and leave the list.',
      ].join(' '),
      parameters: [
        { $ref: '#/components/parameters/Limit' },
        { $ref: '#/components/parameters/Offset' },
      ],
      responses: {
        '200': { description: 'one page of the trash', content: json(schema('TrashPage')) },
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/trash/{id}/restore': {
    post: {
      tags: ['trash'],
      operationId: 'restoreFromTrash',
      summary: 'Restore a deleted resource, and for a folder everything deleted with it',
      description: [
        'Into its old parent when that folder is active, else at the root. A folder takes along every descendant that',
        'was deleted with it (same deletion time), not what was deleted before on its own. All or nothing: when any',
        'restored resource’s name is held by an active sibling, 409 and nothing is restored. Every restored resource',
        'gets rev + 1 and appears in the change feed.',
      ].join(' '),
      parameters: [idParam],
      responses: {
        '200': { description: 'the restored resource (File or Folder, with `type`)', content: json({ anyOf: [schema('File'), schema('Folder')] }) },
        '401': response('Unauthorized'),
        '404': notInTrash,
        '409': response('NameConflict'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/trash/{id}': {
    delete: {
      tags: ['trash'],
      operationId: 'purgeFromTrash',
      summary: 'Purge a deleted resource now, and for a folder everything deleted with it',
      description:
        'The content leaves the disk and the resource can no longer be restored; it stays in the change feed as deleted (rev + 1).',
      parameters: [idParam],
      responses: {
        '204': { description: 'purged' },
        '401': response('Unauthorized'),
        '404': notInTrash,
        '503': response('Unavailable'),
      },
    },
  },
};

export const trashParameters = {
  Limit: {
    name: 'limit',
    in: 'query',
    description: 'page size, default 50; values above 1000 are clamped to 1000; 0, negative or non-integer: 400',
    schema: { type: 'integer', minimum: 1, default: 50 },
  },
  Offset: { name: 'offset', in: 'query', description: 'rows skipped, default 0', schema: { type: 'integer', minimum: 0, default: 0 } },
};

export const trashSchemas = {
  TrashItem: {
    description: 'a File or Folder representation plus its type and when it was deleted',
    allOf: [
      { anyOf: [schema('File'), schema('Folder')] },
      {
        type: 'object',
        required: ['type', 'deletedAt'],
        properties: { type: { type: 'string', enum: ['file', 'folder'] }, deletedAt: { type: 'string', format: 'date-time' } },
      },
    ],
  },
  TrashPage: { allOf: [schema('Page'), { type: 'object', properties: { items: { type: 'array', items: schema('TrashItem') } } }] },
};
