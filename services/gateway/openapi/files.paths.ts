import { quotaExceeded } from './common';
import { replaceContentOperation, uploadDigestField } from './content.paths';
import { ref, response, ok, ID, NAME, idParam, LIMIT, OFFSET, errorResponse, contentHeaders } from './common';

/** Files, folders and their content. */
export const filePaths = {
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
                ...uploadDigestField,
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
        '507': quotaExceeded,
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
        '302': {
          description:
            'S3_DOWNLOADS=redirect, a whole-content GET without If-Match: `Location` is a presigned URL of the object in the store, valid at most 5 minutes, that answers with this Content-Disposition and Content-Type; ETag and Repr-Digest name its bytes',
          headers: { Location: { schema: { type: 'string', format: 'uri' } } },
        },
        '400': errorResponse('a Range that cannot be satisfied (INVALID_REQUEST)'),
        '401': response('Unauthorized'),
        '404': errorResponse('absent, deleted, not owned, a folder, or a file created by sync with no content yet'),
        '503': response('Unavailable'),
      },
    },
    put: replaceContentOperation,
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
};
