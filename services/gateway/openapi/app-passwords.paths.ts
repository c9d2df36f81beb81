/**
 * App passwords (docs/WEBDAV.md, section 1), merged into the document by openapi.document.ts.
 * WebDAV itself, at `/dav/`, is outside `/v1` and is described by RFC 4918 and docs/WEBDAV.md.
 */
import { errorResponse, ID, json, ref, response, TIMESTAMP } from './common';

const idParam = { name: 'id', in: 'path', required: true, description: 'the app password’s id', schema: ID };

export const appPasswordsTag = {
  name: 'app-passwords',
  description: 'passwords for stock WebDAV clients at `/dav/` (HTTP Basic with the username and one of them)',
};

export const appPasswordSchemas = {
  AppPasswordCreation: {
    type: 'object',
    required: ['name', 'currentPassword'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 100, description: 'also the name of the device created for it' },
      currentPassword: {
        type: 'string',
        minLength: 1,
        maxLength: 1024,
        description: 'the account password, so that a token alone cannot mint a lasting credential; checked like a sign-in and counted against the login rate limits',
      },
    },
  },
  CreatedAppPassword: {
    type: 'object',
    required: ['id', 'name', 'password', 'deviceId', 'createdAt'],
    properties: {
      id: ID,
      name: { type: 'string' },
      password: { type: 'string', description: '192 random bits, base64url; shown in this response only, stored only as a keyed hash' },
      deviceId: { ...ID, description: 'the device the password is bound to: changes made with it carry this deviceId in the change feed' },
      createdAt: TIMESTAMP,
    },
  },
  AppPassword: {
    type: 'object',
    required: ['id', 'name', 'deviceId', 'createdAt', 'lastUsedAt'],
    properties: {
      id: ID,
      name: { type: 'string' },
      deviceId: ID,
      createdAt: TIMESTAMP,
      lastUsedAt: { oneOf: [TIMESTAMP, { type: 'null' }], description: 'when a WebDAV request last signed in with it (to within AUTH_CACHE_MS); null if never' },
    },
  },
  AppPasswordList: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: ref('AppPassword') } } },
};

export const appPasswordPaths = {
  '/v1/app-passwords': {
    post: {
      tags: ['app-passwords'],
      operationId: 'createAppPassword',
      summary: 'Create an app password, bound to a new device of the caller',
      requestBody: { required: true, content: json(ref('AppPasswordCreation')) },
      responses: {
        '201': { description: 'the password, shown this once', content: json(ref('CreatedAppPassword')) },
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '403': errorResponse('`currentPassword` is not the account password (FORBIDDEN); nothing is created'),
        '413': response('BodyTooLarge'),
        '429': response('RateLimited'),
        '503': response('Unavailable'),
      },
    },
    get: {
      tags: ['app-passwords'],
      operationId: 'listAppPasswords',
      summary: 'The caller’s app passwords, oldest first, without the passwords',
      responses: {
        '200': { description: 'every app password of the caller', content: json(ref('AppPasswordList')) },
        '401': response('Unauthorized'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/app-passwords/{id}': {
    delete: {
      tags: ['app-passwords'],
      operationId: 'revokeAppPassword',
      summary: 'Revoke an app password: from then on it gets 401 on every gateway, and its device is retired',
      parameters: [idParam],
      responses: {
        '204': { description: 'revoked' },
        '401': response('Unauthorized'),
        '404': response('NotFound'),
        '503': response('Unavailable'),
      },
    },
  },
};
