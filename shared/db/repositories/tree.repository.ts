import type { Knex } from 'knex';

/**
 * Levels one recursive query walks. Both servers stop a recursive CTE at 1000 iterations (MariaDB
 * silently, MySQL 8 with an error), so a walk goes this far per query and goes on from where it
 * stopped: no depth of the tree is out of reach.
 */
export const LEVELS_PER_QUERY = 500;

/** Longest list of ids a walk starts from in one query. */
const FRONTIER_CHUNK = 500;

/**
 * Walks of one user's folder tree, up (ancestors) and down (subtrees), at any depth. Every walk keeps
 * a set of the ids it has seen, so even a corrupt tree that holds a cycle cannot make it loop: each
 * walk costs at most one visit per resource, in queries of up to LEVELS_PER_QUERY levels.
 */
export class TreeRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /**
   * True when `candidateId` is `folderId` itself or one of its ancestors, i.e. moving the candidate
   * under the folder would make a cycle. Ancestors of any resource, active or deleted, are followed.
   */
  async isSelfOrAncestor(userId: string, folderId: string, candidateId: string): Promise<boolean> {
    const seen = new Set<string>();
    let start: string | null = folderId;
    while (start !== null && !seen.has(start)) {
      const rows = await this.chainUp(userId, start);
      if (rows.length === 0) return false;
      let next: string | null = null;
      for (const row of rows) {
        if (row.id === candidateId) return true;
        // A cycle in stored data: everything from here on was walked already.
        if (seen.has(row.id)) return false;
        seen.add(row.id);
        next = row.parent_id;
      }
      start = rows.length > LEVELS_PER_QUERY ? next : null;
    }
    return false;
  }

  /** The ancestor chain from `id` up, at most LEVELS_PER_QUERY + 1 rows, nearest first. */
  private async chainUp(userId: string, id: string): Promise<{ id: string; parent_id: string | null }[]> {
    const result = await this.db.raw(
      `WITH RECURSIVE chain (id, parent_id, depth) AS (
         SELECT id, parent_id, 0 FROM resources WHERE id = ? AND user_id = ?
         UNION ALL
         SELECT r.id, r.parent_id, c.depth + 1 FROM resources r JOIN chain c ON r.id = c.parent_id
         WHERE r.user_id = ? AND c.depth < ?
       )
       SELECT id, parent_id FROM chain ORDER BY depth`,
      [id, userId, userId, LEVELS_PER_QUERY],
    );
    return result[0] as { id: string; parent_id: string | null }[];
  }

  /**
   * The ids of `rootId` and of every active descendant of it, root first, each once. Wide levels are
   * walked in chunks; deep ones LEVELS_PER_QUERY levels per query, continued from the deepest rows.
   */
  async activeSubtree(userId: string, rootId: string): Promise<string[]> {
    const seen = new Set<string>([rootId]);
    const all: string[] = [rootId];
    let frontier = [rootId];
    while (frontier.length > 0) {
      const next: string[] = [];
      for (let i = 0; i < frontier.length; i += FRONTIER_CHUNK) {
        const rows = await this.descendants(userId, frontier.slice(i, i + FRONTIER_CHUNK));
        for (const row of rows) {
          if (seen.has(row.id)) continue;
          seen.add(row.id);
          all.push(row.id);
          // The walk stopped at these rows: their children are the next query's business.
          if (Number(row.depth) === LEVELS_PER_QUERY) next.push(row.id);
        }
      }
      frontier = next;
    }
    return all;
  }

  /** Active descendants of the given folders, down to LEVELS_PER_QUERY levels below them. */
  private async descendants(userId: string, parents: string[]): Promise<{ id: string; depth: number | string }[]> {
    const marks = parents.map(() => '?').join(', ');
    const result = await this.db.raw(
      `WITH RECURSIVE sub (id, depth) AS (
         SELECT id, 1 FROM resources WHERE user_id = ? AND alive = 1 AND parent_id IN (${marks})
         UNION ALL
         SELECT r.id, s.depth + 1 FROM resources r JOIN sub s ON r.parent_id = s.id
         WHERE r.user_id = ? AND r.alive = 1 AND s.depth < ?
       )
       SELECT id, depth FROM sub`,
      [userId, ...parents, userId, LEVELS_PER_QUERY],
    );
    return result[0] as { id: string; depth: number | string }[];
  }
}
