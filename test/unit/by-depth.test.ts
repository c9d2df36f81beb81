import { byDepth } from '../../clients/src/cli/match';

/** A random forest of `n` nodes: each node's parent is an earlier node, or none (the top), shuffled in the map. */
function forest(n: number, seed: number): Map<string, { parentId: string }> {
  let x = seed;
  const next = () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
  const ids = Array.from({ length: n }, (_, i) => `n${i}`);
  const parents = ids.map((_, i) => (i === 0 || next() < 0.1 ? '' : ids[Math.floor(next() * i)]!));
  const order = ids.map((_, i) => i).sort(() => next() - 0.5);
  return new Map(order.map((i) => [ids[i]!, { parentId: parents[i]! }]));
}

test('byDepth puts every parent before its children, and with `only` keeps the same order among those ids', () => {
  for (let seed = 1; seed <= 50; seed++) {
    const nodes = forest(400, seed);
    const all = byDepth(nodes);
    expect(all).toHaveLength(nodes.size);
    const at = new Map(all.map((id, i) => [id, i]));
    for (const [id, n] of nodes) if (n.parentId) expect(at.get(n.parentId)!).toBeLessThan(at.get(id)!);
    const some = [...nodes.keys()].filter((_, i) => (i * seed) % 3 === 0);
    const chosen = new Set(some);
    expect(byDepth(nodes, some)).toEqual(all.filter((id) => chosen.has(id)));
  }
});
