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
import * as createContentStore from './20261124000201_create_content_store';
import * as createAppPasswords from './20261124000401_create_app_passwords';
import * as createDavProperties from './20261124000402_create_dav_properties';
import * as addUserQuotaAndUsage from './20261124000501_add_user_quota_and_usage';
import * as createUploadReservations from './20261124000502_create_upload_reservations';
import * as createFileVersions from './20261124000503_create_file_versions';
import * as backfillUserUsage from './20261124000504_backfill_user_usage';
import * as addDeviceKind from './20261127000101_add_device_kind';
import * as backfillDeviceKind from './20261127000102_backfill_device_kind';
import * as createLinks from './20261127000201_create_links';
import * as addChildrenNameIndex from './20261127000301_add_children_name_index';
import * as createContentChunkLists from './20261127000401_create_content_chunk_lists';
import * as createContentThumbnails from './20261128000101_create_content_thumbnails';
import * as addResourcesSha256Index from './20261128000102_add_resources_sha256_index';
import * as addFileVersionsSha256Index from './20261128000103_add_file_versions_sha256_index';
import * as createContentCrc32 from './20261128000104_create_content_crc32';

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
  createContentStore,
  createAppPasswords,
  createDavProperties,
  addUserQuotaAndUsage,
  createUploadReservations,
  createFileVersions,
  backfillUserUsage,
  addDeviceKind,
  backfillDeviceKind,
  createLinks,
  addChildrenNameIndex,
  createContentChunkLists,
  createContentThumbnails,
  addResourcesSha256Index,
  addFileVersionsSha256Index,
  createContentCrc32,
];

export const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: async () => MIGRATIONS,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => m,
};
