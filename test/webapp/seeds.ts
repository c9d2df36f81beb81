import { DerivedData } from '../../shared/db/derived/derived.hooks';
import type { Db } from '../../shared/db/knex';
import { newId } from '../../shared/ids';

/**
 * `count` files named file-00000.txt, file-00001.txt, ... in one folder, inserted 1000 rows a
 * statement with their derived data (folder counts, search index) as the service keeps it.
 */
export async function seedManyFiles(db: Db, userId: string, parentId: string, count: number): Promise<void> {
  const at = new Date();
  for (let start = 0; start < count; start += 1000) {
    const rows = [];
    for (let i = start; i < Math.min(count, start + 1000); i += 1) {
      rows.push({
        id: newId(),
        user_id: userId,
        parent_id: parentId,
        type: 'file',
        name: `file-${String(i).padStart(5, '0')}.txt`,
        size_bytes: i,
        mime_type: 'text/plain',
        created_at: at,
        updated_at: at,
      });
    }
    await db('resources').insert(rows);
    await DerivedData.of(db).activated(userId, rows.map((r) => r.id));
  }
}
