/**
 * The OpenAPI description of bulk transfers (docs/SYNC-CLIENT.md, "Many small files together").
 */

const json = (schema: object) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json({ $ref: '#/components/schemas/Error' }) });
const FRAMING = [
  'The body is `application/vnd.filesync.bulk`: per file, a 4-byte big-endian header length, that many bytes of JSON header,',
  'then the file’s `size` bytes; a header length of 0 ends it. At most 1000 files.',
].join('\n');

export const bulkPaths = {
  '/v1/files/bulk': {
    post: {
      tags: ['files'],
      operationId: 'bulkUpload',
      summary: 'Create or replace many files in one request',
      description: [
        FRAMING,
        'A header `{"name", "size", "id"?, "folderId"?, "sha256"?}` creates a file as `POST /v1/files` would; `{"fileId", "size",',
        '"ifMatch"?: "<sha256>", "ifNoneMatch"?: "*", "sha256"?}` replaces its content as `PUT /v1/files/{id}/content` would.',
        'Each file has its own result, in order: `{"status": 201|200, "file"}` or `{"status", "error"}` with the error its single',
        'counterpart would have had; a file that fails keeps nothing. A body broken inside a frame answers 400 with',
        '`details.results` for the files before it.',
      ].join('\n'),
      requestBody: { required: true, content: { 'application/vnd.filesync.bulk': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
      responses: {
        '200': {
          description: 'one result per file, in order',
          content: json({ type: 'object', required: ['results'], properties: { results: { type: 'array', items: { type: 'object', required: ['status'] } } } }),
        },
        '400': error('a malformed frame or header, or more than 1000 files (INVALID_REQUEST)'),
        '401': { $ref: '#/components/responses/Unauthorized' },
      },
    },
  },
  '/v1/files/bulk/content': {
    post: {
      tags: ['files'],
      operationId: 'bulkDownload',
      summary: 'The content of many files in one response',
      description: [
        'JSON `{"ids": [...]}`, 1 to 1000 file ids. The answer uses the bulk framing: per file a header',
        '`{"id", "size", "sha256", "rev"}` followed by its bytes, or `{"id", "size": 0, "error"}` (as `GET /v1/files/{id}/content`',
        'would have answered); then the end. Check each file’s bytes against its `sha256`.',
      ].join('\n'),
      requestBody: {
        required: true,
        content: json({ type: 'object', required: ['ids'], properties: { ids: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string' } } } }),
      },
      responses: {
        '200': { description: 'the framed files', content: { 'application/vnd.filesync.bulk': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
        '400': error('ids missing, empty, too many or not strings (INVALID_REQUEST)'),
        '401': { $ref: '#/components/responses/Unauthorized' },
      },
    },
  },
};
