import type { ContentCrcRepository } from './content-crc.repository';

const PAGE = 500;

/**
 * Drops the recorded CRC-32s of digests no file, trashed file or version has as content any more
 * (run by the workers' maintenance queue, beside the thumbnails' sweep). Content leaves by many
 * paths; checking the digests afterwards covers them all. A row dropped just as the same bytes are
 * written again only costs that content's next ZIP a CRC pass.
 */
export class ContentCrcSweeper {
  constructor(private readonly crcs: ContentCrcRepository) {}

  async sweep(): Promise<{ crcsRemoved: number }> {
    let removed = 0;
    let after = '';
    for (;;) {
      const page = await this.crcs.page(after, PAGE);
      if (page.length === 0) break;
      after = page[page.length - 1]!;
      const stored = await this.crcs.stillStored(page);
      removed += await this.crcs.remove(page.filter((sha256) => !stored.has(sha256)));
      if (page.length < PAGE) break;
    }
    return { crcsRemoved: removed };
  }
}
