/**
 * Thumbnails of image files (docs/WEBAPP.md, "Pictures"; docs/ARCHITECTURE.md, "Thumbnails"): made by
 * the workers after an image is uploaded, served here; never decoded by the gateway.
 */
import { errorResponse, idParam, response } from './common';

export const thumbnailPaths = {
  '/v1/files/{id}/thumbnail': {
    get: {
      tags: ['files'],
      operationId: 'getThumbnail',
      summary: 'A thumbnail of an image file, as WebP',
      description: [
        'Images (JPEG, PNG, WebP, GIF, AVIF, and HEIC where the image library reads it) get thumbnails made by the',
        'workers from their content, as background jobs (the `thumbnails` queue on the dashboard), stored once per',
        'content: files with the same bytes share them, and they are not counted in the quota. Sizes 64, 128 and 256',
        'are made after the upload, 512 and 1024 when first asked for; the answer is the largest stored not above',
        '`size`, so it is at most `size` pixels on its longer side (an image smaller than that is never enlarged), and',
        'while a larger one is being made it is the 256 with `Cache-Control: no-store`. 404 while there is none: the file is not an image, its',
        'thumbnail is not made yet (asking enqueues it again if its job was lost), or the image cannot be read. The',
        'ETag names the content’s SHA-256 and the stored size; `If-None-Match` with it answers 304.',
      ].join(' '),
      security: [{ bearerAuth: [] }, { sessionCookie: [] }],
      parameters: [
        idParam('file'),
        { name: 'size', in: 'query', description: 'the longest side wanted, in pixels', schema: { type: 'integer', minimum: 64, maximum: 1024, default: 256 } },
        { name: 'If-None-Match', in: 'header', required: false, description: 'an ETag this endpoint sent', schema: { type: 'string' } },
      ],
      responses: {
        '200': {
          description: 'the thumbnail',
          headers: {
            ETag: { description: '`"<sha256>-<stored size>"`', schema: { type: 'string' } },
            'Cache-Control': { description: '`private, max-age=60`; `no-store` when a larger size is still being made', schema: { type: 'string' } },
            'X-Content-Type-Options': { description: '`nosniff`', schema: { type: 'string' } },
          },
          content: { 'image/webp': { schema: { type: 'string', contentMediaType: 'image/webp' } } },
        },
        '304': { description: 'If-None-Match names this thumbnail’s ETag' },
        '400': errorResponse('size is not an integer from 64 to 1024 (INVALID_REQUEST)'),
        '401': response('Unauthorized'),
        '404': errorResponse('no active file of the caller with that id, or no thumbnail of it (not an image, not made yet, unreadable) (NOT_FOUND)'),
        '503': response('Unavailable'),
      },
    },
  },
};
