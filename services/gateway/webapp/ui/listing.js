// One folder's children as the listing shows them: pages of 200 fetched as they scroll into view.
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, messageOf } from './api.js';

/** @typedef {import('./file-table.js').Item} Item */
const PAGE = 200;

/**
 * The children of one folder, page by page as they scroll into view; `reload` refetches the pages
 * already seen (after a change here or elsewhere).
 * @param {string} folderId @param {string} sort @param {string} order
 */
export function useListing(folderId, sort, order) {
  const [state, setState] = useState({ total: 0, pages: /** @type {Map<number, Item[]>} */ (new Map()), loaded: false, version: 0 });
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const pending = useRef(/** @type {Set<number>} */ (new Set()));
  const generation = useRef(0);

  /** @param {number[]} pageNumbers */
  const fetchPages = useCallback(
    async (pageNumbers, fresh = false) => {
      const gen = generation.current;
      const results = await Promise.all(
        pageNumbers.map((n) =>
          api.get(`/v1/items?limit=${PAGE}&offset=${n * PAGE}&sort=${sort}&order=${order}${folderId ? `&folderId=${folderId}` : ''}`).then((page) => [n, page]),
        ),
      ).catch((err) => {
        setError(messageOf(err));
        return null;
      });
      pageNumbers.forEach((n) => pending.current.delete(n));
      if (!results || gen !== generation.current) return;
      setError(null);
      setState((old) => {
        const pages = fresh ? new Map() : new Map(old.pages);
        let total = old.total;
        for (const [n, page] of results) {
          pages.set(n, page.items);
          total = page.total;
        }
        return { total, pages, loaded: true, version: old.version + 1 };
      });
    },
    [folderId, sort, order],
  );

  useEffect(() => {
    generation.current += 1;
    pending.current.clear();
    setState({ total: 0, pages: new Map(), loaded: false, version: 0 });
    pending.current.add(0);
    void fetchPages([0], true);
  }, [fetchPages]);

  const want = useCallback(
    (/** @type {number} */ first, /** @type {number} */ last) => {
      const needed = [];
      for (let n = Math.floor(first / PAGE); n <= Math.floor(Math.max(first, last - 1) / PAGE); n += 1) {
        if (!state.pages.has(n) && !pending.current.has(n) && n * PAGE < Math.max(state.total, 1)) {
          pending.current.add(n);
          needed.push(n);
        }
      }
      if (needed.length > 0) void fetchPages(needed);
    },
    [state, fetchPages],
  );

  const reload = useCallback(() => {
    const seen = [...state.pages.keys()];
    void fetchPages(seen.length > 0 ? seen : [0], true);
  }, [state, fetchPages]);

  const itemAt = useCallback((/** @type {number} */ i) => state.pages.get(Math.floor(i / PAGE))?.[i % PAGE], [state]);
  const loadedItems = useMemo(() => [...state.pages.values()].flat(), [state]);
  return { ...state, error, want, reload, itemAt, loadedItems };
}
