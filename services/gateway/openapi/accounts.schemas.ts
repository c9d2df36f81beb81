import { ref, ID, TIMESTAMP, PASSWORD } from './common';

/** Schemas of accounts: devices, login, passwords and users. */
export const accountSchemas = {
  DeviceRegistration: {
    type: 'object',
    required: ['name'],
    properties: { name: { type: 'string', minLength: 1, maxLength: 100 }, platform: { type: ['string', 'null'], maxLength: 50 } },
  },
  Device: {
    type: 'object',
    required: ['id', 'name', 'platform', 'createdAt'],
    properties: { id: ID, name: { type: 'string' }, platform: { type: ['string', 'null'] }, createdAt: TIMESTAMP },
  },
  LoginRequest: {
    type: 'object',
    required: ['username', 'password', 'deviceId'],
    properties: { username: { type: 'string', minLength: 1 }, password: { type: 'string', minLength: 1, format: 'password' }, deviceId: ID },
  },
  LoginResponse: {
    type: 'object',
    required: ['token', 'tokenType', 'expiresAt', 'user', 'deviceId'],
    properties: {
      token: { type: 'string' },
      tokenType: { const: 'Bearer' },
      expiresAt: TIMESTAMP,
      user: ref('UserRef'),
      deviceId: ID,
    },
  },
  PasswordChange: {
    type: 'object',
    required: ['current_password', 'new_password'],
    properties: { current_password: { type: 'string', minLength: 1, format: 'password' }, new_password: PASSWORD },
  },
  UserRef: { type: 'object', required: ['id', 'username'], properties: { id: ID, username: { type: 'string' } } },
  UserCreation: {
    type: 'object',
    required: ['username', 'password'],
    properties: {
      username: { type: 'string', pattern: '^[A-Za-z0-9._-]{3,64}$' },
      password: PASSWORD,
      email: { type: ['string', 'null'], format: 'email' },
      isAdmin: { type: 'boolean', default: false },
    },
  },
  OwnDevice: {
    type: 'object',
    required: ['id', 'name', 'platform', 'createdAt', 'lastUsedAt', 'current'],
    properties: {
      id: ID,
      name: { type: 'string' },
      platform: { type: ['string', 'null'] },
      createdAt: TIMESTAMP,
      lastUsedAt: { type: ['string', 'null'], format: 'date-time', description: 'the last sign-in on it; null before the first' },
      current: { type: 'boolean', description: 'the device of the token (or session) making this request' },
    },
  },
  DeviceList: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: ref('OwnDevice') } } },
  Me: {
    type: 'object',
    required: ['id', 'username', 'email', 'isAdmin', 'quotaBytes'],
    properties: {
      id: ID,
      username: { type: 'string' },
      email: { type: ['string', 'null'] },
      isAdmin: { type: 'boolean' },
      quotaBytes: { type: ['integer', 'null'], minimum: 0, description: 'null: no quota' },
    },
  },
  ListedUser: {
    allOf: [ref('User'), { type: 'object', required: ['usedBytes'], properties: { usedBytes: { type: 'integer', minimum: 0, description: 'bytes held: files, trash, versions and unfinished uploads' } } }],
  },
  UserPage: {
    type: 'object',
    required: ['items', 'total', 'limit', 'offset'],
    properties: { items: { type: 'array', items: ref('ListedUser') }, total: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' } },
  },
  User: {
    type: 'object',
    required: ['id', 'username', 'email', 'isAdmin', 'createdAt', 'quotaBytes'],
    properties: {
      id: ID,
      username: { type: 'string' },
      email: { type: ['string', 'null'] },
      isAdmin: { type: 'boolean' },
      createdAt: TIMESTAMP,
      quotaBytes: { type: ['integer', 'null'], minimum: 0, description: 'null: no quota; DEFAULT_QUOTA_BYTES for a new user' },
    },
  },
};
