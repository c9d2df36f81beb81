import type { Knex } from 'knex';

/**
 * Which of `digests` some file or version still has as content (trash included, purged not): what
 * is kept by digest beside the content (thumbnails, CRC-32s) goes once its digest is in none.
 */
export async function digestsStillStored(db: Knex, digests: string[]): Promise<Set<string>> {
  if (digests.length === 0) return new Set();
  const files = (await db('resources').whereIn('content_sha256', digests).whereNotNull('storage_key').distinct('content_sha256')) as { content_sha256: string }[];
  const versions = (await db('file_versions').whereIn('content_sha256', digests).distinct('content_sha256')) as { content_sha256: string }[];
  return new Set([...files, ...versions].map((r) => r.content_sha256));
}
