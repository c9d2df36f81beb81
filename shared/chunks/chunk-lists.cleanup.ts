import type { ContentStore } from '../storage/content.store';
import type { ChunkListRepository } from './chunk-list.repository';

/**
 * The content store, whose `remove` also removes the chunk list of the removed content. Every way
 * content goes away (replacement, dropped versions, purge, expiry, fsck) ends in `remove`, so the
 * list can never outlive its bytes; a list whose removal fails is left to the next removal of that
 * key and cannot describe other bytes, since keys are never reused.
 */
export function withChunkListCleanup(store: ContentStore, lists: ChunkListRepository): ContentStore {
  const remove = async (key: string): Promise<void> => {
    await store.remove(key);
    await lists.remove(key);
  };
  // Methods are bound once: the hot paths (an archive's reads) look them up per file.
  const bound = new Map<PropertyKey, { of: unknown; fn: unknown }>();
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'remove') return remove;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let hit = bound.get(prop);
      if (hit?.of !== value) bound.set(prop, (hit = { of: value, fn: (value as (...args: unknown[]) => unknown).bind(target) }));
      return hit.fn;
    },
  });
}
