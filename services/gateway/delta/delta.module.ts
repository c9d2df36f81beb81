import type { Router } from 'express';
import type { Knex } from 'knex';
import type { Logger } from '../../../shared/logger';
import type { ListClaims } from '../../../shared/chunks/list.claims';
import { ChunkListRepository } from '../../../shared/chunks/chunk-list.repository';
import { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import type { ContentStore } from '../../../shared/storage/content.store';
import type { requireUser } from '../auth/auth.middleware';
import type { ContentService } from '../content/content.service';
import { ChunkListsService } from './chunk-lists.service';
import { deltaRoutes } from './delta.routes';
import { DeltaService } from './delta.service';

export interface DeltaDeps {
  db: Knex;
  store: ContentStore;
  content: ContentService;
  maxUploadBytes: number;
  authenticated: ReturnType<typeof requireUser>;
  logger?: Logger;
  /** Who cuts which list across the deployment; without it each request cuts what it lacks. */
  listClaims?: ListClaims;
}

/** Chunk lists and delta uploads: the routes, wired to the content store and the content replacement path. */
export function deltaModule(deps: DeltaDeps): Router {
  const chunkLists = new ChunkListsService(new ResourceRepository(deps.db), deps.store, new ChunkListRepository(deps.db), deps.logger, deps.listClaims);
  const delta = new DeltaService(deps.store, deps.content, chunkLists, deps.maxUploadBytes, deps.logger);
  return deltaRoutes(chunkLists, delta, deps.authenticated);
}
