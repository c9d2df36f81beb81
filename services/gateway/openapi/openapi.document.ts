/**
 * The OpenAPI 3.1 description of the HTTP contract, served at /v1/openapi.json and browsable at /docs.
 * Each area of the API describes its paths in a file of its own under openapi/. A test walks the
 * Express app and fails when a route is missing here or described here without being served, so the
 * two cannot drift apart silently.
 */
import { accountPaths } from './accounts.paths';
import { appPasswordPaths, appPasswordSchemas, appPasswordsTag } from './app-passwords.paths';
import { linkPaths, linkSchemas, linkSecuritySchemes, linksTag } from './links.paths';
import { components } from './components';
import { deltaPaths, deltaSchemas } from './delta.paths';
import { bulkPaths } from './bulk.paths';
import { filePaths } from './files.paths';
import { monitoringPaths } from './monitoring.paths';
import { quotaPaths, quotaSchemas, quotaTags, setQuotaOperation } from './quota.paths';
import { syncPaths } from './sync.paths';
import { thumbnailPaths } from './thumbnails.paths';
import { trashParameters, trashPaths, trashSchemas, trashTag } from './trash.paths';
import { uploadPaths } from './uploads.paths';
import { webAppPaths, webAppSchemas, webAppSecuritySchemes, webAppTags } from './webapp.paths';

export const openapiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'filesync',
    version: '1.1.0',
    summary: 'File storage and sync: per-user files and folders, uploads, search, device outbox sync, permission snapshot, change feed.',
    description: [
      'Version 1.1 of the HTTP contract. Everything lives under `/v1` except the operations endpoints',
      '(`/healthz`, `/readyz`, `/metrics`), this description (`/docs`) and the BullMQ dashboard',
      '(`/admin/queues`, administrators only, by Bearer token or HTTP Basic).',
      '',
      'Every error is `{"error": {"code", "message"}}` with an optional `details`; unknown routes give 404 NOT_FOUND.',
      'A JSON body over 1 MiB gives 413 INVALID_REQUEST, malformed JSON 400 INVALID_REQUEST.',
      'Every response carries `X-Request-Id` (the one the client sent when it is well-formed, else a new one);',
      'it also appears in the gateway and worker logs of that request.',
    ].join('\n'),
    license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
  },
  servers: [{ url: '/', description: 'this gateway' }],
  security: [{ bearerAuth: [] }],
  tags: [
    { name: 'auth', description: 'devices, sign-in, passwords' },
    { name: 'users', description: 'user administration and lookup' },
    { name: 'files', description: 'files, folders and their content' },
    { name: 'sync', description: 'outbox synchronisation, the permission snapshot and the change feed' },
    trashTag,
    appPasswordsTag,
    linksTag,
    { name: 'uploads', description: 'resumable uploads over tus 1.0.0' },
    ...webAppTags,
    ...quotaTags,
    { name: 'operations', description: 'health, readiness, metrics and this description' },
  ],
  paths: {
    ...accountPaths,
    '/v1/users/{id}': { ...accountPaths['/v1/users/{id}'], patch: setQuotaOperation },
    ...filePaths,
    ...deltaPaths,
    ...bulkPaths,
    ...quotaPaths,
    ...syncPaths,
    ...trashPaths,
    ...appPasswordPaths,
    ...linkPaths,
    ...uploadPaths,
    ...monitoringPaths,
    ...webAppPaths,
    ...thumbnailPaths,
  },
  components: {
    ...components,
    securitySchemes: { ...components.securitySchemes, ...linkSecuritySchemes, ...webAppSecuritySchemes },
    parameters: trashParameters,
    schemas: { ...components.schemas, ...trashSchemas, ...quotaSchemas, ...appPasswordSchemas, ...linkSchemas, ...webAppSchemas, ...deltaSchemas },
  },
} as const;
