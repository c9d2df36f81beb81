import type { ContentRepository } from '../db/repositories/content.repository';
import { newId } from '../ids';
import type { ContentStore } from '../storage/content.store';

/** How many content keys are looked for when a database with content meets a store without a marker. */
const SAMPLE = 20;

/** The store is not the database's: starting, or repairing, would judge every file missing. */
export class StoreMismatchError extends Error {}

/** Whether the store carries the database's marker, and what each holds. */
export interface StoreIdentity {
  recorded: string | undefined;
  marker: string | undefined;
  matches: boolean;
}

export async function readIdentity(store: ContentStore, rows: ContentRepository): Promise<StoreIdentity> {
  const [recorded, marker] = await Promise.all([rows.recordedStoreId(), store.readMarker()]);
  return { recorded, marker, matches: recorded !== undefined && marker === recorded };
}

/**
 * Ties the store to the database, or refuses: called by the gateway and the worker at start-up.
 * - Marker and database agree: the store is the database's.
 * - The store carries another id: it belongs to another database; refused, unless this database
 *   has neither an id nor content yet (a database created afresh over an existing store).
 * - The store has no marker: it is claimed when the database holds no content yet (a newcomer's first
 *   start, or a store moved while empty). When the database holds content, it is claimed only if the
 *   database has no id yet (an installation from before markers) and some of that content is found
 *   in the store; otherwise refused: UPLOAD_DIR is not the database's store (a missing mount, a
 *   missing variable), and nothing may run on it.
 * Two processes starting at once agree: the database keeps the first id recorded, and the marker the
 * first one written. Returns the store id.
 */
export async function claimStore(store: ContentStore, rows: ContentRepository): Promise<string> {
  const { recorded, marker } = await readIdentity(store, rows);
  if (recorded !== undefined && marker === recorded) return recorded;
  const where = store.location;
  if (marker !== undefined) {
    // A database created afresh (no id, no content) over a marked store: nothing of this database can
    // be judged missing, so it takes the store's id rather than asking for a step. This keeps a start
    // with a new DATABASE_URL and the default UPLOAD_DIR working; the store's older content is then
    // this database's orphans, which fsck reports and removes only with --repair.
    if (recorded === undefined && (await rows.someStorageKeys(1)).length === 0) {
      if ((await rows.recordStoreId(marker)) === marker) return marker;
    }
    throw new StoreMismatchError(
      `${where} is the content store of another database (its marker is ${marker}, ${recorded ? `this database's store is ${recorded}` : 'this database has none yet'}); point UPLOAD_DIR at this database's store`,
    );
  }
  const keys = await rows.someStorageKeys(SAMPLE);
  if (keys.length > 0) {
    const found = recorded === undefined && (await Promise.all(keys.map((k) => store.stat(k)))).some(Boolean);
    if (!found) {
      throw new StoreMismatchError(
        `${where} is not the content store of this database: the database has content but the store has no marker${recorded ? ` (expected ${recorded})` : ' and none of that content'}; point UPLOAD_DIR at the right store, or see "Store marker" in docs/OPERATIONS.md`,
      );
    }
  }
  const id = recorded ?? (await rows.recordStoreId(newId()));
  const claimed = await store.claimMarker(id);
  if (claimed !== id) throw new StoreMismatchError(`${where} was claimed by another database (marker ${claimed}) while this one started`);
  return id;
}

/**
 * The operator's override (`npm run fsck -- --claim-store`): marks a store that has no marker as the
 * database's, whatever content it holds or lacks. A store with another database's marker stays refused.
 */
export async function claimStoreKnowingly(store: ContentStore, rows: ContentRepository): Promise<string> {
  const marker = await store.readMarker();
  const id = (await rows.recordedStoreId()) ?? (await rows.recordStoreId(newId()));
  if (marker !== undefined && marker !== id) {
    throw new StoreMismatchError(`${store.location} is the content store of another database (its marker is ${marker}, this database's store is ${id})`);
  }
  const claimed = await store.claimMarker(id);
  if (claimed !== id) throw new StoreMismatchError(`${store.location} was claimed by another database (marker ${claimed})`);
  return id;
}
