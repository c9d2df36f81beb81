// The folder's listing: a table whose rows are drawn only around what is on screen, so a folder of
// 100,000 children scrolls like a small one. Pages of 200 children load as they come into view.
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatBytes } from './api.js';
import { html } from './html.js';
import { ActionsMenu, formatTime } from './ui.js';

export const ROW_HEIGHT = 44;
const OVERSCAN = 8;

/**
 * @typedef {{ type: 'file' | 'folder', id: string, name: string, size?: number, mimeType?: string, updatedAt: string, folderId?: string }} Item
 * @param {{
 *   total: number, itemAt: (index: number) => Item | undefined, want: (first: number, last: number) => void,
 *   sort: string, order: string, onSort?: (sort: string) => void,
 *   selected: Set<string>, onSelect: (item: Item, on: boolean) => void, onSelectAll?: (on: boolean) => void,
 *   actions: (item: Item) => Array<{ label: string, run: () => void, danger?: boolean }>,
 *   folderHref: (item: Item) => string, fileHref: (item: Item) => string, caption: string,
 *   extraColumn?: { title: string, cell: (item: Item) => any },
 * }} props
 */
export function FileTable(props) {
  const { total, itemAt, want, sort, order, onSort, selected, onSelect, actions, caption, extraColumn } = props;
  const scroller = useRef(/** @type {HTMLDivElement | null} */ (null));
  const [view, setView] = useState({ top: 0, height: 600 });
  useEffect(() => {
    const el = scroller.current;
    if (!el) return undefined;
    let frame = 0;
    const measure = () => {
      frame = 0;
      setView({ top: el.scrollTop, height: el.clientHeight || 600 });
    };
    const onScroll = () => {
      if (!frame) frame = requestAnimationFrame(measure);
    };
    measure();
    el.addEventListener('scroll', onScroll, { passive: true });
    const resize = new ResizeObserver(onScroll);
    resize.observe(el);
    return () => {
      el.removeEventListener('scroll', onScroll);
      resize.disconnect();
      if (frame) cancelAnimationFrame(frame);
    };
  }, []);
  const first = Math.max(0, Math.floor(view.top / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(total, Math.ceil((view.top + view.height) / ROW_HEIGHT) + OVERSCAN);
  useEffect(() => want(first, last), [first, last, total, want]);

  /** @param {string} key @param {string} label */
  const header = (key, label) => {
    const active = sort === key;
    const ariaSort = active ? (order === 'desc' ? 'descending' : 'ascending') : undefined;
    if (!onSort) return html`<th scope="col">${label}</th>`;
    return html`<th scope="col" aria-sort=${ariaSort}>
      <button type="button" class="sort" onClick=${() => onSort(key)}>${label}${active && html`<span aria-hidden="true">${order === 'desc' ? ' ▼' : ' ▲'}</span>`}</button>
    </th>`;
  };

  const rows = [];
  for (let i = first; i < last; i += 1) {
    const item = itemAt(i);
    if (!item) {
      rows.push(html`<tr key=${`loading-${i}`} class="row" aria-rowindex=${i + 2}><td colspan=${extraColumn ? 6 : 5}>Loading…</td></tr>`);
      continue;
    }
    const isSelected = selected.has(item.id);
    rows.push(html`<tr key=${item.id} class=${isSelected ? 'row selected' : 'row'} aria-rowindex=${i + 2}>
      <td class="check"><input type="checkbox" aria-label=${`Select ${item.name}`} checked=${isSelected}
        onChange=${(/** @type {Event} */ e) => onSelect(item, /** @type {HTMLInputElement} */ (e.currentTarget).checked)} /></td>
      <td class="name">
        <span class=${item.type === 'folder' ? 'kind folder' : 'kind file'} aria-hidden="true"></span>
        ${item.type === 'folder'
          ? html`<a href=${props.folderHref(item)} data-nav>${item.name}</a>`
          : html`<a href=${props.fileHref(item)} download=${item.name}>${item.name}</a>`}
      </td>
      ${extraColumn && html`<td class="where">${extraColumn.cell(item)}</td>`}
      <td class="size">${item.type === 'file' ? formatBytes(item.size ?? 0) : ''}</td>
      <td class="time">${formatTime(item.updatedAt)}</td>
      <td class="actions"><${ActionsMenu} label=${`Actions for ${item.name}`} items=${actions(item)} /></td>
    </tr>`);
  }
  const allSelected = total > 0 && selected.size >= total;
  return html`<div class="table-scroll" ref=${scroller} tabindex="-1">
    <table class="files" aria-rowcount=${total + 1}>
      <caption class="visually-hidden">${caption}</caption>
      <thead>
        <tr aria-rowindex="1">
          <th scope="col" class="check">${props.onSelectAll
            ? html`<input type="checkbox" aria-label="Select all" checked=${allSelected}
                onChange=${(/** @type {Event} */ e) => props.onSelectAll?.(/** @type {HTMLInputElement} */ (e.currentTarget).checked)} />`
            : html`<span class="visually-hidden">Selection</span>`}</th>
          ${header('name', 'Name')}
          ${extraColumn && html`<th scope="col">${extraColumn.title}</th>`}
          ${header('size', 'Size')}
          ${header('updatedAt', 'Modified')}
          <th scope="col"><span class="visually-hidden">Actions</span></th>
        </tr>
      </thead>
      <tbody>
        <tr class="spacer" aria-hidden="true"><td colspan=${extraColumn ? 6 : 5} style=${{ height: `${first * ROW_HEIGHT}px` }}></td></tr>
        ${rows}
        <tr class="spacer" aria-hidden="true"><td colspan=${extraColumn ? 6 : 5} style=${{ height: `${Math.max(0, total - last) * ROW_HEIGHT}px` }}></td></tr>
      </tbody>
    </table>
  </div>`;
}
