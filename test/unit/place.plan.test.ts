import { planPlaces, type Place } from '../../clients/src/cli/place.plan';

/** The order of a pass's renames and moves (clients/src/cli/place.plan.ts). */
const places = (entries: [string, string, string][]) => new Map<string, Place>(entries.map(([id, parentId, name]) => [id, { parentId, name }]));

test('two swapped names converge through one temporary name', () => {
  const steps = planPlaces(places([['a', '', 'x'], ['b', '', 'y']]), places([['a', '', 'y'], ['b', '', 'x']])).flat();
  expect(steps).toHaveLength(3);
  expect(steps[0]).toMatchObject({ type: 'update', name: expect.stringContaining('.filesync-swap-') });
  // Applied in order, every node ends at its target and no two ever hold one place.
  const at = new Map([['a', 'x'], ['b', 'y']]);
  for (const s of steps) {
    if (s.type !== 'update') throw new Error('a move in a rename-only swap');
    expect([...at.values()]).not.toContain(s.name);
    at.set(s.id, s.name);
  }
  expect(Object.fromEntries(at)).toEqual({ a: 'y', b: 'x' });
});

test('a node whose target name another node keeps is left where it is, without temporary names', () => {
  // `a` is renamed to `docs` here while the server's `docs` (`d`) stays: a clash for the pull to resolve.
  const steps = planPlaces(places([['a', '', 'dir'], ['d', '', 'docs']]), places([['a', '', 'docs']])).flat();
  expect(steps).toEqual([]);
});

test('a node blocked by one that stays does not stop the others, nor a cycle beside it', () => {
  const steps = planPlaces(
    places([['a', '', 'dir'], ['d', '', 'docs'], ['b', '', 'p'], ['c', '', 'q'], ['e', 'f1', 'n']]),
    places([['a', '', 'docs'], ['b', '', 'q'], ['c', '', 'p'], ['e', 'f2', 'n']]),
  ).flat();
  expect(steps.filter((s) => s.id === 'a')).toEqual([]);
  expect(steps.filter((s) => s.id === 'e')).toEqual([{ id: 'e', type: 'move', parentId: 'f2' }]);
  expect(steps.filter((s) => s.id === 'b' || s.id === 'c')).toHaveLength(3);
  expect(steps.filter((s) => s.type === 'update' && s.name.includes('.filesync-swap-'))).toHaveLength(1);
});

test('a node whose halfway places are both held reaches a free target through a temporary name', () => {
  // `x` is P/Docs and goes to /docs, while /Docs (P itself) and P/docs stay where they are.
  const current = places([['P', '', 'Docs'], ['x', 'P', 'Docs'], ['d', 'P', 'docs']]);
  const steps = planPlaces(current, places([['x', '', 'docs']])).flat();
  expect(steps).toHaveLength(3);
  expect(steps[0]).toMatchObject({ id: 'x', type: 'update', name: expect.stringContaining('.filesync-swap-') });
  expect(steps[1]).toEqual({ id: 'x', type: 'move', parentId: '' });
  expect(steps[2]).toEqual({ id: 'x', type: 'update', name: 'docs' });
  // Applied in order, no step lands on a place another node holds.
  const at = new Map([...current].map(([id, p]) => [id, { ...p }]));
  for (const s of steps) {
    const p = at.get(s.id)!;
    const next = s.type === 'move' ? { parentId: s.parentId, name: p.name } : { parentId: p.parentId, name: s.name };
    expect([...at].filter(([id, q]) => id !== s.id && q.parentId === next.parentId && q.name === next.name)).toEqual([]);
    at.set(s.id, next);
  }
  expect(at.get('x')).toEqual({ parentId: '', name: 'docs' });
});
