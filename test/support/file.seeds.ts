import type { Db } from '../../shared/db/knex';
import { insertFile } from './fixtures';

/* Files seeded straight into MySQL with known times, and the File representation the API gives them. */

/** Fixed instants, so every sort has one right answer. */
export const at = (second: number) => new Date(Date.UTC(2020, 0, 1, 0, 0, second));

export interface Seeded {
  id: string;
  name: string;
  parentId: string | null;
  size: number;
  mimeType: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const fileView = (f: Seeded) => ({
  id: f.id,
  name: f.name,
  size: f.size,
  mimeType: f.mimeType ?? '',
  folderId: f.parentId ?? '',
  createdAt: f.createdAt.toISOString(),
  updatedAt: f.updatedAt.toISOString(),
  rev: 1,
});

export async function seedFileIn(db: Db, owner: string, name: string, parentId: string | null, extra: Partial<Omit<Seeded, 'id' | 'name' | 'parentId'>> = {}): Promise<Seeded> {
  const seeded = {
    name,
    parentId,
    size: extra.size ?? 10,
    mimeType: extra.mimeType === undefined ? 'text/plain' : extra.mimeType,
    createdAt: extra.createdAt ?? at(0),
    updatedAt: extra.updatedAt ?? extra.createdAt ?? at(0),
  };
  const id = await insertFile(db, owner, name, parentId, seeded);
  return { id, ...seeded };
}

export const ids = (res: { body: { items: Array<{ id: string }> } }) => res.body.items.map((i) => i.id);
export const names = (res: { body: { items: Array<{ name: string }> } }) => res.body.items.map((i) => i.name);
