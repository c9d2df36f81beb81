/** Share links (docs/LINKS.md): the owner's side under /v1/links, the public side under /v1/public/{token}. */
import { contentHeaders, errorResponse, ID, json, LIMIT, OFFSET, PASSWORD, quotaExceeded, ref, response, TIMESTAMP } from './common';

const TAG = 'links';
const idParam = { name: 'id', in: 'path', required: true, description: 'the link’s id', schema: ID };
const token = { name: 'token', in: 'path', required: true, description: 'the link’s token', schema: { type: 'string', minLength: 22 } };
const noStore = {
  'Cache-Control': { schema: { const: 'no-store' } },
  'Referrer-Policy': { schema: { const: 'no-referrer' } },
};
const gone = errorResponse('unknown, revoked, expired or used-up link, a resource in the trash or purged, or an id outside the linked subtree: the same body for all (NOT_FOUND)');
const locked = errorResponse('the link has a password and the request carries no valid access string for it (PASSWORD_REQUIRED)');
const uploadOnly = errorResponse('an upload link lists and serves nothing; a read link accepts no upload (FORBIDDEN)');
const busy = errorResponse('too many transfers of this owner’s links at once on this gateway (SERVICE_UNAVAILABLE)', true);
const publicOp = (operationId: string, summary: string, extra: object) => ({ tags: [TAG], operationId, summary, security: [{}, { linkAccess: [] }], ...extra });

export const linksTag = { name: TAG, description: 'share links: read links to files and folders, upload links to folders, and their public side' };

export const linkSchemas = {
  Link: {
    type: 'object',
    required: ['id', 'token', 'url', 'resourceId', 'resourceType', 'access', 'hasPassword', 'expiresAt', 'maxDownloads', 'downloads', 'deviceId', 'createdAt'],
    properties: {
      id: ID,
      token: { type: 'string', description: '144 random bits, base64url' },
      url: { type: 'string', description: '`<PUBLIC_URL>/s/<token>`; PUBLIC_URL defaults to the request’s own origin' },
      resourceId: ID,
      resourceType: { enum: ['file', 'folder'] },
      access: { enum: ['read', 'upload'] },
      hasPassword: { type: 'boolean' },
      expiresAt: { oneOf: [TIMESTAMP, { type: 'null' }] },
      maxDownloads: { oneOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }] },
      downloads: { type: 'integer', minimum: 0, description: 'responses that started at byte 0, and archives' },
      deviceId: { ...ID, description: 'the link’s own device: changes made through the link carry it in the change feed' },
      createdAt: TIMESTAMP,
    },
  },
  LinkCreation: {
    type: 'object',
    required: ['resourceId'],
    properties: {
      resourceId: ID,
      access: { enum: ['read', 'upload'], default: 'read', description: '`upload` for a folder only' },
      password: { ...PASSWORD, description: 'stored only as an Argon2id hash' },
      expiresAt: { ...TIMESTAMP, description: 'in the future' },
      maxDownloads: { type: 'integer', minimum: 1, description: 'not on an upload link' },
    },
  },
  LinkChange: {
    type: 'object',
    additionalProperties: false,
    properties: {
      password: { oneOf: [PASSWORD, { type: 'null' }], description: 'null removes it; a change ends every access string unlocked before' },
      expiresAt: { oneOf: [TIMESTAMP, { type: 'null' }] },
      maxDownloads: { oneOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }] },
    },
  },
  LinkPage: {
    type: 'object',
    required: ['items', 'total', 'limit', 'offset'],
    properties: { items: { type: 'array', items: ref('Link') }, total: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' } },
  },
  PublicLink: {
    type: 'object',
    required: ['access', 'hasPassword', 'expiresAt', 'resource'],
    properties: {
      access: { enum: ['read', 'upload'] },
      hasPassword: { type: 'boolean' },
      expiresAt: { oneOf: [TIMESTAMP, { type: 'null' }] },
      resource: {
        type: 'object',
        required: ['type', 'name'],
        properties: { type: { enum: ['file', 'folder'] }, name: { type: 'string' }, size: { type: 'integer', description: 'files only' } },
      },
    },
  },
  PublicItemPage: {
    type: 'object',
    required: ['items', 'total', 'limit', 'offset'],
    properties: {
      items: {
        type: 'array',
        items: {
          type: 'object',
          required: ['type', 'id', 'name', 'updatedAt'],
          properties: { type: { enum: ['file', 'folder'] }, id: ID, name: { type: 'string' }, size: { type: 'integer' }, mimeType: { type: 'string' }, updatedAt: TIMESTAMP },
        },
      },
      total: { type: 'integer' },
      limit: { type: 'integer' },
      offset: { type: 'integer' },
    },
  },
  Unlock: { type: 'object', required: ['access', 'expiresAt'], properties: { access: { type: 'string' }, expiresAt: TIMESTAMP } },
};

export const linkSecuritySchemes = {
  linkAccess: { type: 'http', scheme: 'bearer', description: 'the access string of POST /v1/public/{token}/unlock (also accepted as `?access=`)' },
};

export const linkPaths = {
  '/v1/links': {
    post: {
      tags: [TAG],
      operationId: 'createLink',
      summary: 'Create a share link to one of the caller’s files or folders, with a device of its own',
      requestBody: { required: true, content: json(ref('LinkCreation')) },
      responses: { '201': { description: 'the link', content: json(ref('Link')) }, '400': response('BadRequest'), '401': response('Unauthorized'), '404': response('NotFound') },
    },
    get: {
      tags: [TAG],
      operationId: 'listLinks',
      summary: 'The caller’s links, newest first',
      parameters: [{ name: 'resourceId', in: 'query', description: 'only this resource’s links', schema: ID }, LIMIT, OFFSET],
      responses: { '200': { description: 'a page of links', content: json(ref('LinkPage')) }, '400': response('BadRequest'), '401': response('Unauthorized') },
    },
  },
  '/v1/links/{id}': {
    get: {
      tags: [TAG],
      operationId: 'getLink',
      summary: 'One link, used up or expired ones included',
      parameters: [idParam],
      responses: { '200': { description: 'the link', content: json(ref('Link')) }, '401': response('Unauthorized'), '404': response('NotFound') },
    },
    patch: {
      tags: [TAG],
      operationId: 'changeLink',
      summary: 'Change the password, expiry or download limit; `{}` changes nothing',
      parameters: [idParam],
      requestBody: { required: true, content: json(ref('LinkChange')) },
      responses: { '200': { description: 'the link', content: json(ref('Link')) }, '400': response('BadRequest'), '401': response('Unauthorized'), '404': response('NotFound') },
    },
    delete: {
      tags: [TAG],
      operationId: 'revokeLink',
      summary: 'Revoke a link: its token answers 404 on every gateway from then on, and its device is retired',
      parameters: [idParam],
      responses: { '204': { description: 'revoked' }, '401': response('Unauthorized'), '404': response('NotFound') },
    },
  },
  '/v1/public/{token}': {
    get: publicOp('getPublicLink', 'What the link shares: its terms and the resource’s name (and size for a file); nothing about the owner', {
      parameters: [token],
      responses: { '200': { description: 'the link', headers: noStore, content: json(ref('PublicLink')) }, '404': gone },
    }),
  },
  '/v1/public/{token}/unlock': {
    post: publicOp('unlockLink', 'Trade the link’s password for an access string valid at most 24 hours', {
      parameters: [token],
      requestBody: { required: true, content: json({ type: 'object', required: ['password'], properties: { password: { type: 'string' } } }) },
      responses: {
        '200': { description: 'the access string', headers: noStore, content: json(ref('Unlock')) },
        '400': response('BadRequest'),
        '401': errorResponse('wrong password (UNAUTHORIZED)'),
        '404': gone,
        '429': errorResponse('too many attempts on this link or from this address (RATE_LIMITED)', true),
      },
    }),
  },
  '/v1/public/{token}/items': {
    get: publicOp('listPublicItems', 'A folder of a read link’s subtree: folders first, then files, by name', {
      parameters: [token, { name: 'folderId', in: 'query', description: 'default: the linked folder', schema: ID }, LIMIT, OFFSET],
      responses: { '200': { description: 'a page of items', headers: noStore, content: json(ref('PublicItemPage')) }, '400': response('BadRequest'), '401': locked, '403': uploadOnly, '404': gone },
    }),
  },
  '/v1/public/{token}/content': {
    get: publicOp('getPublicContent', 'A file’s bytes, as GET /v1/files/{id}/content; a response from byte 0 counts one download', {
      parameters: [token, { name: 'fileId', in: 'query', description: 'required for a folder link, refused (400) for a file link', schema: ID }],
      responses: {
        '200': { description: 'the content, as an attachment', headers: { ...contentHeaders(), ...noStore }, content: { '*/*': { schema: { type: 'string', format: 'binary' } } } },
        '206': { description: 'one range of it', content: { '*/*': { schema: { type: 'string', format: 'binary' } } } },
        '400': response('BadRequest'),
        '401': locked,
        '403': uploadOnly,
        '404': gone,
        '503': busy,
      },
    }),
  },
  '/v1/public/{token}/archive': {
    get: publicOp('getPublicArchive', 'A folder of a read link’s subtree as one streamed ZIP (entries stored); counts one download', {
      parameters: [token, { name: 'folderId', in: 'query', description: 'default: the linked folder', schema: ID }],
      responses: {
        '200': { description: 'the ZIP', headers: noStore, content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } } },
        '400': response('BadRequest'),
        '401': locked,
        '403': uploadOnly,
        '404': gone,
        '503': busy,
      },
    }),
  },
  '/v1/public/{token}/files': {
    post: publicOp('uploadThroughLink', 'Drop one file into an upload link’s folder; a taken name becomes `<stem> (2)<.ext>`, `(3)`, ...', {
      parameters: [token],
      requestBody: { required: true, content: { 'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } } } } },
      responses: {
        '201': { description: 'stored', headers: noStore, content: json({ type: 'object', required: ['name', 'size'], properties: { name: { type: 'string' }, size: { type: 'integer' } } }) },
        '400': response('BadRequest'),
        '401': locked,
        '403': uploadOnly,
        '404': gone,
        '413': errorResponse('larger than MAX_UPLOAD_BYTES (FILE_TOO_LARGE)'),
        '503': busy,
        '507': quotaExceeded,
      },
    }),
  },
};
