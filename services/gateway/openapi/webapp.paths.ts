/**
 * The web app's part of the OpenAPI description: its session (an HttpOnly cookie bound to a device of
 * the user), the folder listing it shows (GET /v1/items), breadcrumbs, and the pages it serves.
 * docs/WEBAPP.md explains the design.
 */
import { errorResponse, ID, json, LIMIT, NAME, OFFSET, ok, ref, response, TIMESTAMP } from './common';

export const webAppTags = [
  { name: 'session', description: 'the web app’s sign-in: an HttpOnly cookie bound to a new device of the user' },
  { name: 'web app', description: 'the pages and bundles of the web app for people' },
];

export const webAppSecuritySchemes = {
  sessionCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: 'filesync_session',
    description: [
      'Set by POST /v1/session: HttpOnly, SameSite=Lax, Path=/, Secure when the request came over https (TRUST_PROXY',
      'lets the gateway see that behind a proxy), 7 days, renewed by GET /v1/session. Accepted wherever a Bearer',
      'token is, when the request has no `Authorization` header. A request other than GET, HEAD or OPTIONS carrying it',
      'must come from the app’s own origin: `Sec-Fetch-Site: same-origin`, or without that header an `Origin` equal to',
      'the request’s own origin or PUBLIC_URL; otherwise 403 FORBIDDEN before anything else (the same host on',
      'another port included). Bearer requests are not subject to this check.',
    ].join(' '),
  },
};

const both = [{ bearerAuth: [] }, { sessionCookie: [] }];

export const webAppSchemas = {
  SignIn: {
    type: 'object',
    required: ['username', 'password'],
    properties: { username: { type: 'string', minLength: 1, maxLength: 255 }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
  },
  Session: {
    type: 'object',
    required: ['user', 'deviceId', 'expiresAt'],
    properties: {
      user: {
        type: 'object',
        required: ['id', 'username', 'isAdmin'],
        properties: { id: ID, username: { type: 'string' }, isAdmin: { type: 'boolean' } },
      },
      deviceId: { ...ID, description: 'the device this browser became at sign-in' },
      expiresAt: { ...TIMESTAMP, description: 'when the cookie lapses unless renewed' },
    },
  },
  Item: {
    type: 'object',
    required: ['type', 'id', 'name', 'createdAt', 'updatedAt'],
    properties: {
      type: { enum: ['file', 'folder'] },
      id: ID,
      name: NAME,
      size: { type: 'integer', minimum: 0, description: 'files only' },
      mimeType: { type: 'string', description: 'files only; "" when none' },
      createdAt: TIMESTAMP,
      updatedAt: TIMESTAMP,
    },
  },
  ItemPage: { allOf: [ref('Page'), { type: 'object', properties: { items: { type: 'array', items: ref('Item') } } }] },
  FolderPath: {
    type: 'object',
    required: ['items'],
    properties: {
      items: {
        type: 'array',
        description: 'from the root’s child down to the folder itself',
        items: { type: 'object', required: ['id', 'name'], properties: { id: ID, name: NAME } },
      },
    },
  },
};

const page = (summary: string) => ({
  tags: ['web app'],
  summary,
  description: 'The web app’s page (the same HTML for every view; the view follows the address). Content-Security-Policy without inline scripts, `frame-ancestors \'none\'`.',
  security: [],
  responses: {
    '200': { description: 'the app’s HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
    '503': errorResponse('the web app has not been built (`npm run build`)'),
  },
});

export const webAppPaths = {
  '/v1/session': {
    post: {
      tags: ['session'],
      operationId: 'signIn',
      summary: 'Sign the browser in: a new device of the user, and the session cookie',
      description: [
        'Checks the password exactly as POST /v1/auth/login does (same 401 whatever was wrong, counted in the same',
        'LOGIN_RATE_LIMIT and LOGIN_ADDRESS_RATE_LIMIT buckets), then registers a device named after the browser and',
        'system ("Firefox on Linux") and sets the `filesync_session` cookie. The token is never in the body.',
        'Refused (403) when not sent from the app’s own origin.',
      ].join(' '),
      security: [],
      requestBody: { required: true, content: json(ref('SignIn')) },
      responses: {
        '200': {
          description: 'signed in; `Set-Cookie: filesync_session=…; HttpOnly; SameSite=Lax`',
          headers: { 'Set-Cookie': { schema: { type: 'string' } } },
          content: json(ref('Session')),
        },
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '403': errorResponse('sent from another origin (FORBIDDEN)'),
        '429': response('RateLimited'),
        '503': response('Unavailable'),
      },
    },
    get: {
      tags: ['session'],
      operationId: 'currentSession',
      summary: 'Who is signed in; renews the session cookie for another 7 days',
      security: both,
      responses: { '200': ok('the session', ref('Session')), '401': response('Unauthorized'), '503': response('Unavailable') },
    },
    delete: {
      tags: ['session'],
      operationId: 'signOut',
      summary: 'Sign out: retires the browser’s device (its tokens and sessions answer 401 on every gateway) and clears the cookie',
      security: both,
      responses: {
        '204': { description: 'signed out' },
        '401': response('Unauthorized'),
        '403': errorResponse('sent from another origin with the cookie (FORBIDDEN)'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/items': {
    get: {
      tags: ['files'],
      operationId: 'listItems',
      summary: 'One folder’s children, folders first, then files',
      description: [
        'Names compare by Unicode code point after NFC. `sort=size` keeps folders in ascending name order; the order',
        'applies to the files (and to folders when sorting by name or updatedAt). Paging follows the list rules, with',
        'the id as the final tie-breaker; `total` counts both kinds. A page costs the same in a folder of 100,000',
        'children as in a small one (one index range per kind).',
      ].join(' '),
      security: both,
      parameters: [
        { name: 'folderId', in: 'query', description: 'the folder; absent or empty: the root; any other value that is not an active folder of the caller (a malformed one included): 404', schema: { type: 'string' } },
        { name: 'sort', in: 'query', schema: { enum: ['name', 'size', 'updatedAt'], default: 'name' } },
        { name: 'order', in: 'query', schema: { enum: ['asc', 'desc'], default: 'asc' } },
        LIMIT,
        OFFSET,
      ],
      responses: {
        '200': ok('one page of children', ref('ItemPage')),
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '404': errorResponse('folderId is not an active folder of the caller, or is malformed (NOT_FOUND)'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/archive': {
    get: {
      tags: ['files'],
      operationId: 'downloadArchive',
      summary: 'One streamed ZIP of any of the caller’s files and folders',
      description: [
        'A plain GET, so a browser downloads it by following a link (`<a href download>`) with its session cookie.',
        'Files are at the top of the archive under their names, each folder’s active files under `name/...` (paths',
        'relative to the selection, empty folders left out); two selected items of one name become `name` and',
        '`name (2)`. Entries are stored, not deflated. The file is `<folder name>.zip` for one folder, `files.zip`',
        'otherwise. Every id must be an active file or folder of the caller, or nothing is sent (404). At most',
        'ARCHIVES_PER_USER archives of a user stream at once per gateway; the next waits up to 5 s, then 503.',
      ].join(' '),
      security: both,
      parameters: [
        {
          name: 'ids',
          in: 'query',
          required: true,
          description: 'comma-separated ids of files and folders, 1 to 200 (repeats count once)',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '200': {
          description: 'the ZIP, `Content-Disposition: attachment`',
          headers: { 'Cache-Control': { schema: { const: 'no-store' } } },
          content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
        },
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '404': errorResponse('an id is not an active file or folder of the caller (NOT_FOUND)'),
        '503': errorResponse('ARCHIVES_PER_USER archives of the caller already streaming (SERVICE_UNAVAILABLE, with Retry-After)'),
      },
    },
  },
  '/v1/folders/{id}/path': {
    get: {
      tags: ['files'],
      operationId: 'folderPath',
      summary: 'A folder and its ancestors, for breadcrumbs',
      security: both,
      parameters: [{ name: 'id', in: 'path', required: true, description: 'the folder id', schema: ID }],
      responses: {
        '200': ok('the path, root side first', ref('FolderPath')),
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '404': errorResponse('not an active folder of the caller (NOT_FOUND)'),
        '503': response('Unavailable'),
      },
    },
  },
  '/': { get: { ...page('The web app: sign-in, then the files at the root'), operationId: 'webApp' } },
  '/trash': { get: { ...page('The web app’s trash view'), operationId: 'webAppTrash' } },
  '/devices': { get: { ...page('The web app’s devices view'), operationId: 'webAppDevices' } },
  '/app-passwords': { get: { ...page('The web app’s app passwords view'), operationId: 'webAppAppPasswords' } },
  '/account': { get: { ...page('The web app’s account view'), operationId: 'webAppAccount' } },
  '/users': { get: { ...page('The web app’s users view (administrators)'), operationId: 'webAppUsers' } },
  '/folders/{id}': {
    get: { ...page('The web app showing one folder'), operationId: 'webAppFolder', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }] },
  },
  '/s/{token}': {
    get: {
      ...page('The public page of a share link (`Referrer-Policy: no-referrer`)'),
      operationId: 'webAppShareLink',
      parameters: [{ name: 'token', in: 'path', required: true, schema: { type: 'string' } }],
    },
  },
  '/app/{name}': {
    get: {
      tags: ['web app'],
      operationId: 'webAppAsset',
      summary: 'A bundle of the web app (script or style sheet), named by its content hash, cached for a year; gzipped when accepted',
      security: [],
      parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': { description: 'the file', content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } } },
        '404': response('NotFound'),
      },
    },
  },
};
