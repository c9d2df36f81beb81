import { quotaExceeded } from './common';
/**
 * /v1/uploads in the OpenAPI description: tus 1.0.0 (core, creation, termination, expiration).
 * Merged into the document by openapi.document.ts.
 */

const errorBody = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
const error = (description: string) => ({ description, content: errorBody });
/** HEAD answers carry no body, so their errors are described by status alone. */
const bare = (description: string) => ({ description });

const TUS_RESUMABLE = { name: 'Tus-Resumable', in: 'header', required: true, schema: { const: '1.0.0' } };
const UPLOAD_ID = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'the upload id, from the Location of its creation',
  schema: { type: 'string', pattern: '^[0-9a-f]{32}$' },
};
const header = (description: string, schema: object = { type: 'string' }) => ({ description, schema });
const EXPIRES = header('RFC 9110 date after which the unfinished upload is removed (UPLOAD_EXPIRY_HOURS after its creation)');
const OFFSET = header('bytes received so far', { type: 'integer', minimum: 0 });
const TUS_HEADERS = {
  'Tus-Version': header('protocol versions spoken', { const: '1.0.0' }),
  'Tus-Extension': header('creation,creation-with-upload,termination,expiration'),
  'Tus-Max-Size': header('MAX_UPLOAD_BYTES', { type: 'integer' }),
};

const metadataDescription = [
  'Comma-separated `key base64(value)` pairs, at most 4 KiB (400 beyond). Keys: `name` (the rules of file names;',
  'required for a new file, and left out or ignored with `fileId`: tus never renames), `folderId` (where the new file',
  'goes; absent or empty: the root), `id` (the new resource id, as in POST /files) or `fileId` (replace that file\'s',
  'content instead, as PUT /files/{id}/content), `sha256` (64 hex characters the bytes must hash to), and optionally',
  '`filetype` or `type` (the media type). Other keys (`relativePath`, ...) are accepted and ignored: neither stored nor',
  'echoed back by HEAD.',
].join(' ');
const conflict = { $ref: '#/components/responses/ContentConflict' };
const malformedUrl = 'a URL whose percent-encoding does not decode (INVALID_REQUEST)';

export const uploadPaths = {
  '/v1/uploads': {
    options: {
      tags: ['uploads'],
      operationId: 'tusOptions',
      summary: 'tus discovery: versions, extensions and the size limit (no token needed)',
      security: [],
      responses: { '204': { description: 'what the server supports', headers: TUS_HEADERS } },
    },
    post: {
      tags: ['uploads'],
      operationId: 'createUpload',
      summary: 'Create a resumable upload (tus creation)',
      description: [
        'The upload belongs to the caller: anyone else gets 404 on it. With `fileId`, an `If-Match: "<sha256>"`',
        'or `If-None-Match: *` given here is checked now and again when the last byte arrives, with the 412 of',
        'PUT /files/{id}/content (its details give the file\'s current rev and sha256).',
        'The target folder (or file) is checked now and again at completion. A user has at most MAX_OPEN_UPLOADS',
        '(default 20) unfinished uploads: the next creation gets 429 with Retry-After until one finishes, is terminated',
        'or expires.',
      ].join(' '),
      parameters: [
        TUS_RESUMABLE,
        { name: 'Upload-Length', in: 'header', required: true, description: 'total size in bytes, at most MAX_UPLOAD_BYTES', schema: { type: 'integer', minimum: 0 } },
        { name: 'Upload-Metadata', in: 'header', required: true, description: metadataDescription, schema: { type: 'string' } },
        { name: 'If-Match', in: 'header', required: false, description: 'with fileId: the content it must still have', schema: { type: 'string' } },
        { name: 'If-None-Match', in: 'header', required: false, description: 'with fileId: `*`, the file must have no content yet', schema: { type: 'string' } },
      ],
      responses: {
        '201': {
          description: 'created; PATCH the bytes to the Location',
          headers: { Location: header('/v1/uploads/{id}'), 'Upload-Expires': EXPIRES, 'Tus-Resumable': header('1.0.0') },
        },
        '400': error(
          `Upload-Length missing, Upload-Metadata over 4 KiB, or metadata invalid: name missing (without fileId) or invalid, malformed ids, both id and fileId, malformed sha256; or ${malformedUrl}`,
        ),
        '401': error('missing or invalid token (UNAUTHORIZED)'),
        '404': error('folderId is not an active folder of the caller, or fileId not an active file of the caller (NOT_FOUND)'),
        '412': {
          ...conflict,
          description: 'with fileId, an If-Match / If-None-Match that does not hold: details {rev, sha256} (PRECONDITION_FAILED); a missing Tus-Resumable is a 412 without details',
        },
        '413': error('Upload-Length over MAX_UPLOAD_BYTES (FILE_TOO_LARGE)'),
        '507': quotaExceeded,
        '429': {
          description: 'the caller already has MAX_OPEN_UPLOADS unfinished uploads (RATE_LIMITED)',
          headers: { 'Retry-After': header('seconds after which a place may be free', { type: 'integer' }) },
          content: errorBody,
        },
      },
    },
  },
  '/v1/uploads/{id}': {
    options: {
      tags: ['uploads'],
      operationId: 'tusUploadOptions',
      summary: 'tus discovery on an upload URL (no token needed)',
      security: [],
      parameters: [UPLOAD_ID],
      responses: { '204': { description: 'what the server supports', headers: TUS_HEADERS } },
    },
    head: {
      tags: ['uploads'],
      operationId: 'uploadOffset',
      summary: 'Where to resume: the offset of an upload of the caller',
      parameters: [UPLOAD_ID, TUS_RESUMABLE],
      responses: {
        '200': {
          description: 'the upload',
          headers: {
            'Upload-Offset': OFFSET,
            'Upload-Length': header('total size', { type: 'integer' }),
            'Upload-Expires': EXPIRES,
            'Upload-Metadata': header('the keys of Upload-Metadata described here (name, folderId, id, fileId, sha256) as the client sent them; nothing else'),
            'Cache-Control': header('no-store'),
          },
        },
        '400': bare(malformedUrl),
        '401': bare('missing or invalid token'),
        '404': bare('no such upload of the caller (finished, terminated, removed after expiry, or another user\'s)'),
        '410': bare('expired, its bytes not yet removed by the scheduled job'),
      },
    },
    patch: {
      tags: ['uploads'],
      operationId: 'uploadBytes',
      summary: 'Send bytes from Upload-Offset; the last byte creates the file',
      description: [
        'Answers 204 with the new Upload-Offset while bytes are missing. The PATCH that brings the last byte',
        'creates the file (or, with fileId, replaces its content) with the rules and errors of POST /files',
        '(PUT /files/{id}/content) and answers 200 with the File; on an error it answers that error and the',
        'upload\'s bytes are removed.',
      ].join(' '),
      parameters: [
        UPLOAD_ID,
        TUS_RESUMABLE,
        { name: 'Upload-Offset', in: 'header', required: true, description: 'must equal the current offset', schema: { type: 'integer', minimum: 0 } },
      ],
      requestBody: { required: true, content: { 'application/offset+octet-stream': { schema: { type: 'string', format: 'binary' } } } },
      responses: {
        '200': {
          description: 'the upload is complete: the new (or updated) file',
          headers: { 'Upload-Offset': OFFSET },
          content: { 'application/json': { schema: { $ref: '#/components/schemas/File' } } },
        },
        '204': { description: 'bytes stored', headers: { 'Upload-Offset': OFFSET, 'Upload-Expires': EXPIRES } },
        '400': error(`at completion: sha256 mismatch, or id already in use; or ${malformedUrl}`),
        '401': error('missing or invalid token (UNAUTHORIZED)'),
        '404': error('no such upload of the caller; at completion, the folder or file is gone (NOT_FOUND)'),
        '410': error('the upload expired (NOT_FOUND)'),
        '409': error('Upload-Offset is not the current offset (INVALID_REQUEST), or at completion a name clash (NAME_CONFLICT)'),
        '412': {
          ...conflict,
          description: 'at completion an If-Match / If-None-Match that does not hold: details {rev, sha256}, and the bytes are removed (PRECONDITION_FAILED); a missing Tus-Resumable is a 412 without details',
        },
        '413': error('more bytes than Upload-Length (FILE_TOO_LARGE)'),
      },
    },
    delete: {
      tags: ['uploads'],
      operationId: 'terminateUpload',
      summary: 'Terminate an upload: its bytes are removed (tus termination)',
      parameters: [UPLOAD_ID, TUS_RESUMABLE],
      responses: {
        '204': { description: 'removed; its place among the caller\'s MAX_OPEN_UPLOADS is free again' },
        '400': error(malformedUrl),
        '401': error('missing or invalid token (UNAUTHORIZED)'),
        '404': error('no such upload of the caller (NOT_FOUND)'),
      },
    },
  },
} as const;
