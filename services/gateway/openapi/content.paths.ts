/**
 * The OpenAPI description of content replacement and digests (docs/ARCHITECTURE.md, "Replacing
 * content, conditions and digests"), merged into the file paths by files.paths.ts.
 */

const ID = { type: 'string', pattern: '^[0-9a-f]{32}$' };
const json = (schema: object) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json({ $ref: '#/components/schemas/Error' }) });

/** `sha-256=:<base64>:`, an RFC 9530 digest as a structured-field dictionary. */
const DIGEST = {
  type: 'string',
  description: 'RFC 9530 dictionary, e.g. `sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:`; only sha-256 is checked, other algorithms are ignored',
  examples: ['sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:'],
};

/** The headers added to content downloads. */
export const reprDigestHeader = {
  'Repr-Digest': { description: 'sha-256 of the whole content (RFC 9530), on 200 and 206 alike', schema: DIGEST },
};

/** The `sha256` form field of POST /files. */
export const uploadDigestField = {
  sha256: {
    type: 'string',
    pattern: '^[0-9a-fA-F]{64}$',
    description: 'SHA-256 of the file part, hex; when the received bytes differ, 400 INVALID_REQUEST and nothing is kept',
  },
};

export const replaceContentOperation = {
  tags: ['files'],
  operationId: 'replaceFileContent',
  summary: 'Replace a file’s content (or give content to a file created by a sync create op)',
  description: [
    'The body is the new content, raw (not multipart), streamed to disk and hashed on the way; at most `MAX_UPLOAD_BYTES`',
    '(a larger `Content-Length` is refused before any byte is read; a longer chunked body is stopped as soon as it passes).',
    '`Content-Type`, when present and not `application/octet-stream`, becomes the `mimeType`; otherwise the file keeps its type,',
    'or gets the one its name’s extension implies when it had none. The answer carries `rev` one higher and the new `sha256`.',
    '',
    'Without conditions the last writer wins. The old content is served until the new one is committed, then removed;',
    'a failed request (400, 404, 412, 413) changes nothing.',
  ].join('\n'),
  parameters: [
    { name: 'id', in: 'path', required: true, description: 'the file id', schema: ID },
    {
      name: 'If-Match',
      in: 'header',
      description: '`"<sha256>"` (the ETag of the content download) or `*`: 412 unless the file’s content is that one (or, for `*`, unless it has content)',
      schema: { type: 'string' },
    },
    { name: 'If-None-Match', in: 'header', description: '`*`: 412 when the file already has content', schema: { type: 'string' } },
    { name: 'Repr-Digest', in: 'header', description: 'the digest of the body; a mismatch is 400 and nothing is kept', schema: DIGEST },
    { name: 'Content-Digest', in: 'header', description: 'the same as Repr-Digest here (no content coding); both must agree when both are sent', schema: DIGEST },
  ],
  requestBody: { required: true, content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
  responses: {
    '200': { description: 'the file with its new content', content: json({ $ref: '#/components/schemas/File' }) },
    '400': error('a malformed digest header, or bytes that do not match it (INVALID_REQUEST)'),
    '401': { $ref: '#/components/responses/Unauthorized' },
    '404': error('a folder, or an id that is malformed, absent, deleted or another user’s (NOT_FOUND)'),
    '412': { $ref: '#/components/responses/ContentConflict' },
    '413': error('larger than MAX_UPLOAD_BYTES (FILE_TOO_LARGE); nothing of it is kept'),
    '507': error('the new content does not fit in the quota even with no version left (QUOTA_EXCEEDED); details: {quotaBytes, usedBytes, neededBytes}; refused before the body is read when Content-Length already cannot fit'),
    '503': { $ref: '#/components/responses/Unavailable' },
  },
};
