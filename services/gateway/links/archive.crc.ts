import { createRequire } from 'node:module';
import zlib from 'node:zlib';

type Crc32 = ((input: string | Buffer, partial?: Buffer | number) => Buffer) & {
  unsigned: (input: string | Buffer, partial?: Buffer | number) => number;
};

/**
 * Makes the ZIP writer's CRC-32 native. yazl computes each entry's CRC-32 with buffer-crc32, in
 * JavaScript: about 180 MB/s on the bench machine, which capped a ZIP of small files far below a
 * plain download (docs/BENCHMARKS.md, "Share links"). zlib.crc32 (Node >= 20.15) computes the same
 * value natively, about eight times faster. yazl looks `unsigned` up on its copy of the module at
 * every call, so giving that copy zlib's function is enough; anything else (a Buffer as the partial
 * CRC, an older Node) keeps the original. The result is identical, only sooner.
 */
export function useNativeZipCrc(): void {
  const native = (zlib as { crc32?: (data: string | NodeJS.ArrayBufferView, value?: number) => number }).crc32;
  if (!native) return;
  const fromYazl = createRequire(require.resolve('yazl'));
  const crc32 = fromYazl('buffer-crc32') as Crc32;
  const original = crc32.unsigned;
  if ((original as { native?: boolean }).native) return;
  const unsigned = (input: string | Buffer, partial?: Buffer | number): number =>
    partial === undefined || typeof partial === 'number' ? native(input, partial ?? 0) : original(input, partial);
  crc32.unsigned = Object.assign(unsigned, { native: true });
}
