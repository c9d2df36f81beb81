import { ref, ID, TIMESTAMP, NAME } from './common';

/** Schemas of the tree: files, folders and their pages. */
export const fileSchemas = {
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
};
