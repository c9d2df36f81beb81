import type { Knex } from 'knex';
import * as createUsers from './20261121000001_create_users';
import * as createDevices from './20261121000002_create_devices';
import * as createResources from './20261121000003_create_resources';
import * as createOperationTraces from './20261121000004_create_operation_traces';
import * as coverSnapshotIndex from './20261121000005_cover_snapshot_index';
import * as addRevisionsAndChangeSequence from './20261122000001_add_revisions_and_change_sequence';
import * as addTrashPurge from './20261122000002_add_trash_purge';
import * as widenStorageKey from './20261122000003_widen_storage_key';
import * as createSyncBatches from './20261122000004_create_sync_batches';
import * as createDerivedTables from './20261122000005_create_derived_tables';
import * as backfillDerivedTables from './20261122000006_backfill_derived_tables';
import * as addChangeDevice from './20261124000101_add_change_device';
import * as backfillChangeDevice from './20261124000102_backfill_change_device';

interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** Every migration, oldest first. Listed here so the same code runs from TypeScript and from dist/. */
const MIGRATIONS: Migration[] = [
  createUsers,
  createDevices,
  createResources,
  createOperationTraces,
  coverSnapshotIndex,
  addRevisionsAndChangeSequence,
  addTrashPurge,
  widenStorageKey,
  createSyncBatches,
  createDerivedTables,
  backfillDerivedTables,
  addChangeDevice,
  backfillChangeDevice,
];

export const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: async () => MIGRATIONS,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => m,
};
