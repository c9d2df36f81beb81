/**
 * The OpenAPI description of chunk lists and delta uploads (docs/SYNC-CLIENT.md, "Changes that move
 * only what changed").
 */

const ID = { type: 'string', pattern: '^[0-9a-f]{32}$' };
const json = (schema: object) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json({ $ref: '#/components/schemas/Error' }) });
const HEX64 = { type: 'string', pattern: '^[0-9a-f]{64}$' };
const idParameter = { name: 'id', in: 'path', required: true, description: 'the file id', schema: ID };

export const deltaSchemas = {
  ContentChunk: {
    type: 'object',
    required: ['offset', 'length', 'sha256'],
    properties: { offset: { type: 'integer', minimum: 0 }, length: { type: 'integer', minimum: 1 }, sha256: HEX64 },
  },
  ChunkList: {
    type: 'object',
    required: ['fileId', 'rev', 'size', 'sha256', 'chunking', 'chunks'],
    properties: {
      fileId: ID,
      rev: { type: 'integer' },
      size: { type: 'integer', minimum: 0 },
      sha256: { ...HEX64, description: 'SHA-256 of the whole content (its ETag)' },
      chunking: {
        type: 'object',
        required: ['algorithm', 'minBytes', 'avgBytes', 'maxBytes'],
        properties: {
          algorithm: { type: 'string', examples: ['fastcdc-gear32-v1'] },
          minBytes: { type: 'integer' },
          avgBytes: { type: 'integer' },
          maxBytes: { type: 'integer' },
        },
      },
      chunks: { type: 'array', items: { $ref: '#/components/schemas/ContentChunk' }, description: 'in content order; offsets follow one another' },
    },
  },
};

export const deltaPaths = {
  '/v1/files/{id}/chunks': {
    get: {
      tags: ['files'],
      operationId: 'getFileChunks',
      summary: 'The chunk list of a file’s current content',
      description: [
        'Content-defined chunks (FastCDC with a 32-bit gear hash, `fastcdc-gear32-v1`; docs/SYNC-CLIENT.md gives the exact',
        'algorithm) with the SHA-256 of each. A client that holds an earlier content cuts it the same way, keeps the chunks it',
        'has, and fetches only the others with Range requests on `GET /v1/files/{id}/content` (with `If-Match: "<sha256>"`,',
        'so the ranges come from this content). A whole upload from 4 MiB on has its list made by a worker right after the',
        'commit, a delta upload keeps the list it checked; any other list is made from the stored bytes the first time it is asked for.',
      ].join('\n'),
      parameters: [idParameter],
      responses: {
        '200': {
          description: 'the chunk list; ETag and Repr-Digest name the content',
          content: json({ $ref: '#/components/schemas/ChunkList' }),
        },
        '401': { $ref: '#/components/responses/Unauthorized' },
        '404': error('a folder, a file without content, or an id that is malformed, absent, deleted or another user’s (NOT_FOUND)'),
      },
    },
  },
  '/v1/files/{id}/delta': {
    post: {
      tags: ['files'],
      operationId: 'applyFileDelta',
      summary: 'Replace a file’s content by sending only what changed',
      description: [
        'The body (`application/vnd.filesync.delta`) describes the new content as records, each one byte of kind then',
        'big-endian unsigned 64-bit fields: optionally first `L` count then count x 36 bytes (the new content’s chunk list,',
        '4 bytes of length and 32 of SHA-256 per chunk, checked against the bytes and kept as the content’s list), `C` offset',
        'length (copy that range of the current content), `D` length then that many bytes (new bytes), and `E` (the end,',
        'required). The service assembles the content in its staging,',
        'checks its SHA-256 against `Repr-Digest`, and commits it exactly as `PUT /v1/files/{id}/content` would: `rev` + 1,',
        'the replaced content kept as a version, quota, the change feed. Any failure keeps nothing.',
        'The answer carries `Filesync-Delta-Copied` and `Filesync-Delta-Literal`: bytes taken from the base and sent.',
      ].join('\n'),
      parameters: [
        idParameter,
        { name: 'If-Match', in: 'header', required: true, description: '`"<sha256>"` of the base content the copies refer to', schema: { type: 'string' } },
        { name: 'Repr-Digest', in: 'header', required: true, description: 'sha-256 of the whole new content (RFC 9530)', schema: { type: 'string' } },
      ],
      requestBody: { required: true, content: { 'application/vnd.filesync.delta': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
      responses: {
        '200': { description: 'the file with its new content', content: json({ $ref: '#/components/schemas/File' }) },
        '400': error('no If-Match or Repr-Digest, a malformed or truncated body, a chunk list that is not true of the content, a copy outside the base, more than 10,000 separate copies, or a content whose SHA-256 is not the declared one (INVALID_REQUEST)'),
        '401': { $ref: '#/components/responses/Unauthorized' },
        '404': error('a folder, or an id that is malformed, absent, deleted or another user’s (NOT_FOUND)'),
        '412': { $ref: '#/components/responses/ContentConflict' },
        '413': error('the new content is larger than MAX_UPLOAD_BYTES (FILE_TOO_LARGE)'),
        '507': error('the new content does not fit in the quota (QUOTA_EXCEEDED)'),
        '503': { $ref: '#/components/responses/Unavailable' },
      },
    },
  },
};
