import { ok, errorResponse, health } from './common';

/** Health, readiness, metrics and this description. */
export const monitoringPaths = {
  '/v1/openapi.json': {
    get: {
      tags: ['operations'],
      operationId: 'openapi',
      summary: 'This description',
      security: [],
      responses: { '200': ok('the OpenAPI 3.1 document', { type: 'object' }) },
    },
  },
  '/healthz': {
    get: {
      tags: ['operations'],
      operationId: 'healthz',
      summary: 'Liveness: 200 while the process runs',
      security: [],
      responses: { '200': ok('alive', health) },
    },
  },
  '/readyz': {
    get: {
      tags: ['operations'],
      operationId: 'readyz',
      summary: 'Readiness: 200 when MySQL and Redis answer, else 503',
      security: [],
      responses: {
        '200': ok('ready', health),
        '503': errorResponse('MySQL or Redis does not answer; details say which', true),
      },
    },
  },
  '/metrics': {
    get: {
      tags: ['operations'],
      operationId: 'metrics',
      summary: 'Prometheus metrics of this gateway process',
      security: [],
      responses: {
        '200': { description: 'the Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } },
      },
    },
  },
};
