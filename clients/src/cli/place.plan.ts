import { randomBytes } from 'node:crypto';

/** Where a node is, or must end up: its parent folder's id (`""` at the root) and its NFC name. */
export interface Place {
  parentId: string;
  name: string;
}

/** One sync op of a plan: a `move` changes only the parent, an `update` only the name. */
export type PlaceStep = { id: string; type: 'move'; parentId: string } | { id: string; type: 'update'; name: string };

const key = (p: Place) => `${p.parentId}/${p.name}`;

const SWAP_MARK = '.filesync-swap-';

/** A name for a node parked out of the way during a swap: unlikely to be taken, within the name limit. */
export function swapName(name: string): string {
  return `${name.slice(0, 200)}${SWAP_MARK}${randomBytes(4).toString('hex')}`;
}

/**
 * Orders the renames and moves of one pass so that none lands on a name another node still holds on
 * the server: a node goes as soon as its target is free, and when every remaining one waits on
 * another (a → b with b → a, or two files swapped across folders) one of them is first renamed to a
 * temporary name in its folder, which breaks the cycle. A node that both moves and is renamed goes
 * in two steps, whichever intermediate place is free, or in three through a temporary name when
 * neither is. A node whose place another keeps (a clash the
 * pull resolves) is left where it is. Answers batches in which each node appears at
 * most once, so that every op's `baseRev` can be the rev the previous batch answered.
 */
export function planPlaces(current: Map<string, Place>, targets: Map<string, Place>): PlaceStep[][] {
  const pos = new Map<string, Place>();
  const held = new Map<string, string>();
  for (const [id, p] of current) {
    pos.set(id, { ...p });
    held.set(key(p), id);
  }
  const free = (p: Place, id: string) => {
    const h = held.get(key(p));
    return h === undefined || h === id;
  };
  // Moving a folder below itself is refused: it waits until the descendant has moved out.
  const below = (parentId: string, id: string) => {
    for (let cur: string | undefined = parentId, guard = 0; cur && guard < 4096; cur = pos.get(cur)?.parentId, guard++) if (cur === id) return true;
    return false;
  };
  // The nodes holding the places a node's next step needs.
  const blockers = (id: string): string[] => {
    const cur = pos.get(id)!;
    const to = targets.get(id)!;
    const places = cur.parentId !== to.parentId ? [{ parentId: to.parentId, name: cur.name }, { parentId: cur.parentId, name: to.name }] : [to];
    return places.flatMap((p) => {
      const h = held.get(key(p));
      return h !== undefined && h !== id ? [h] : [];
    });
  };
  const steps: PlaceStep[] = [];
  const place = (id: string, to: Place) => {
    const from = pos.get(id)!;
    if (held.get(key(from)) === id) held.delete(key(from));
    pos.set(id, to);
    held.set(key(to), id);
  };
  const move = (id: string, parentId: string) => {
    steps.push({ id, type: 'move', parentId });
    place(id, { parentId, name: pos.get(id)!.name });
  };
  const rename = (id: string, name: string) => {
    steps.push({ id, type: 'update', name });
    place(id, { parentId: pos.get(id)!.parentId, name });
  };
  const left = new Set([...targets.keys()].filter((id) => pos.has(id)));
  for (let guard = 0; left.size > 0 && guard < 4 * targets.size + 4; guard++) {
    let progressed = false;
    for (const id of [...left]) {
      const cur = pos.get(id)!;
      const to = targets.get(id)!;
      if (cur.parentId === to.parentId && cur.name === to.name) {
        left.delete(id);
        continue;
      }
      if (cur.parentId !== to.parentId) {
        if (!below(to.parentId, id) && free({ parentId: to.parentId, name: cur.name }, id)) move(id, to.parentId);
        else if (cur.name !== to.name && free({ parentId: cur.parentId, name: to.name }, id)) rename(id, to.name);
        // Both halfway places are held (`P/Docs` to `/docs` beside `/Docs` and `P/docs`), the target is
        // not: the node goes through a temporary name, which the move then carries to its folder.
        else if (!below(to.parentId, id) && free(to, id) && !cur.name.includes(SWAP_MARK)) rename(id, swapName(to.name));
        else continue;
      } else if (free(to, id)) rename(id, to.name);
      else continue;
      progressed = true;
    }
    if (left.size === 0 || progressed) continue;
    // Every remaining node waits on another: one of a cycle steps aside under a temporary name. A
    // node whose place is held by one that stays is not planned: stepping aside would free nothing.
    const cycling = [...left].filter((i) => blockers(i).some((h) => left.has(h)));
    if (cycling.length === 0) break;
    const id = cycling.find((i) => !below(targets.get(i)!.parentId, i)) ?? cycling[0]!;
    rename(id, swapName(targets.get(id)!.name));
  }
  const batches: PlaceStep[][] = [];
  let batch: PlaceStep[] = [];
  let ids = new Set<string>();
  for (const s of steps) {
    if (ids.has(s.id)) {
      batches.push(batch);
      batch = [];
      ids = new Set();
    }
    batch.push(s);
    ids.add(s.id);
  }
  if (batch.length) batches.push(batch);
  return batches;
}
