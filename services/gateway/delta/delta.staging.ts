import { Readable } from 'node:stream';
import { copiesFromBase } from '../../../shared/storage/base-copy';
import type { ContentStore, StagedContent } from '../../../shared/storage/content.store';
import type { DeltaBase } from './delta.assembly';

/**
 * Stages the content a delta assembles from `base` (whose content key is `baseKey`). On a store that
 * copies inside itself (S3), each copy the assembly reads is announced to the store first, so long
 * ones are copied there instead of written again; the assembly still reads them, for the SHA-256
 * of the whole content and its chunk list. Elsewhere the assembled bytes are staged as any upload.
 */
export function stageDelta(
  store: ContentStore,
  baseKey: string | null,
  base: DeltaBase,
  assemble: (base: DeltaBase) => AsyncIterable<Buffer>,
  maxBytes: number,
): Promise<StagedContent> {
  if (!baseKey || !copiesFromBase(store)) return store.stage(Readable.from(assemble(base)), { maxBytes });
  const staging = store.stageFromBase(baseKey, { maxBytes });
  const announcing: DeltaBase = {
    size: base.size,
    chunks: base.chunks,
    read: (range, position) => {
      staging.copying(position, range);
      return base.read(range, position);
    },
  };
  return staging.stage(Readable.from(assemble(announcing)));
}
