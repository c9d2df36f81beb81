import { ref, response, json, ok, idParam, errorResponse, LIMIT, OFFSET } from './common';

/** Devices, sign-in, passwords and user administration. */
export const accountPaths = {
  '/v1/devices': {
    post: {
      tags: ['auth'],
      operationId: 'registerDevice',
      summary: 'Register a device',
      description: 'Limited per client address (REGISTER_RATE_LIMIT a minute, counted across gateways).',
      security: [],
      requestBody: { required: true, content: json(ref('DeviceRegistration')) },
      responses: {
        '201': ok('the device record', ref('Device')),
        '400': response('BadRequest'),
        '413': response('BodyTooLarge'),
        '429': response('RateLimited'),
        '503': response('Unavailable'),
      },
    },
    get: {
      tags: ['auth'],
      operationId: 'listDevices',
      summary: 'The caller’s client devices, oldest first; the devices of app passwords and share links are not listed',
      responses: {
        '200': ok('the devices; `current` marks the one making this request', ref('DeviceList')),
        '401': response('Unauthorized'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/devices/{id}': {
    delete: {
      tags: ['auth'],
      operationId: 'deleteDevice',
      summary: 'Retire one of the caller’s devices (a client, an app password’s or a share link’s)',
      description:
        'From then on every token and session of that device answers 401 on every gateway; an app password bound to it is deleted with it, and a share link bound to it stops working.',
      parameters: [idParam('device')],
      responses: {
        '204': { description: 'retired' },
        '401': response('Unauthorized'),
        '404': errorResponse('not an active device of the caller (NOT_FOUND)'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/auth/login': {
    post: {
      tags: ['auth'],
      operationId: 'login',
      summary: 'Sign in on a registered device',
      description: 'Unknown user, deleted user and wrong password give the same 401, in the same time.',
      security: [],
      requestBody: { required: true, content: json(ref('LoginRequest')) },
      responses: {
        '200': ok('a token binding the user and the device, valid 7 days', ref('LoginResponse')),
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '413': response('BodyTooLarge'),
        '429': response('RateLimited'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/users/me/password': {
    patch: {
      tags: ['auth'],
      operationId: 'changePassword',
      summary: 'Change the caller’s password',
      description: 'Existing tokens stay valid.',
      requestBody: { required: true, content: json(ref('PasswordChange')) },
      responses: {
        '204': { description: 'changed' },
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '403': errorResponse('current_password is wrong (FORBIDDEN)'),
        '413': response('BodyTooLarge'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/users/resolve': {
    get: {
      tags: ['users'],
      operationId: 'resolveUser',
      summary: 'Find a user by exact (lowercase) username',
      parameters: [{ name: 'username', in: 'query', required: true, schema: { type: 'string', minLength: 1 } }],
      responses: {
        '200': ok('the user; never the e-mail or the admin flag', ref('UserRef')),
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '404': response('NotFound'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/users/me': {
    get: {
      tags: ['users'],
      operationId: 'getMe',
      summary: 'The caller’s own account',
      responses: {
        '200': ok('the account', ref('Me')),
        '401': response('Unauthorized'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/users': {
    get: {
      tags: ['users'],
      operationId: 'listUsers',
      summary: 'The active users by username (code point order, then id), with the bytes each holds (administrators only)',
      parameters: [LIMIT, OFFSET],
      responses: {
        '200': ok('one page of users', ref('UserPage')),
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '403': response('Forbidden'),
        '503': response('Unavailable'),
      },
    },
    post: {
      tags: ['users'],
      operationId: 'createUser',
      summary: 'Create a user (administrators only)',
      requestBody: { required: true, content: json(ref('UserCreation')) },
      responses: {
        '201': ok('the new user', ref('User')),
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '403': response('Forbidden'),
        '409': errorResponse('the username exists, ignoring case (NAME_CONFLICT)'),
        '413': response('BodyTooLarge'),
        '503': response('Unavailable'),
      },
    },
  },
  '/v1/users/{id}': {
    delete: {
      tags: ['users'],
      operationId: 'deleteUser',
      summary: 'Delete a user (administrators only); its tokens stop working',
      parameters: [idParam('user')],
      responses: {
        '204': { description: 'deleted' },
        '400': response('BadRequest'),
        '401': response('Unauthorized'),
        '403': response('Forbidden'),
        '404': response('NotFound'),
        '503': response('Unavailable'),
      },
    },
  },
};
