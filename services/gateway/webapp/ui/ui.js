// Small shared pieces: a modal dialog, an actions menu, messages.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from './html.js';

let dialogCounter = 0;

/**
 * A modal dialog on the native <dialog> element: focus moves into it, Escape closes it, the page
 * behind is inert, and focus returns where it was.
 * @param {{ title: string, onClose: () => void, children?: any, wide?: boolean }} props
 */
export function Dialog({ title, onClose, children, wide }) {
  const ref = useRef(/** @type {HTMLDialogElement | null} */ (null));
  const [id] = useState(() => `dialog-title-${++dialogCounter}`);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return undefined;
    const before = document.activeElement;
    dialog.showModal();
    // The first field gets the focus (its text selected, to retype a name); otherwise the browser's choice.
    const field = /** @type {HTMLInputElement | null} */ (dialog.querySelector('input:not([type=hidden]):not([type=radio]), textarea'));
    if (field) {
      field.focus();
      if (field.value) field.select();
    }
    const closed = () => onClose();
    dialog.addEventListener('close', closed);
    return () => {
      dialog.removeEventListener('close', closed);
      if (dialog.open) dialog.close();
      if (before instanceof HTMLElement && before.isConnected) before.focus();
    };
  }, []);
  return html`<dialog ref=${ref} aria-labelledby=${id} class=${wide ? 'wide' : ''}>
    <div class="dialog-head"><h2 id=${id}>${title}</h2><button type="button" class="icon" aria-label="Close" onClick=${() => ref.current?.close()}>×</button></div>
    ${children}
  </dialog>`;
}

/** A message that screen readers announce at once. @param {{ message: string | null | undefined }} props */
export function Alert({ message }) {
  return message ? html`<p role="alert" class="alert">${message}</p>` : null;
}

/**
 * A button opening a menu of actions; arrow keys move between items, Escape closes.
 * @param {{ label: string, items: Array<{ label: string, run: () => void, danger?: boolean }> }} props
 */
export function ActionsMenu({ label, items }) {
  const [open, setOpen] = useState(false);
  const [place, setPlace] = useState(/** @type {Record<string, string>} */ ({}));
  const button = useRef(/** @type {HTMLButtonElement | null} */ (null));
  const menu = useRef(/** @type {HTMLDivElement | null} */ (null));
  useEffect(() => {
    if (!open) return undefined;
    /** @type {HTMLElement | null | undefined} */ (menu.current?.querySelector('[role=menuitem]'))?.focus();
    /** @param {MouseEvent} e */
    const outside = (e) => {
      if (!menu.current?.contains(/** @type {Node} */ (e.target)) && e.target !== button.current) setOpen(false);
    };
    document.addEventListener('mousedown', outside);
    return () => document.removeEventListener('mousedown', outside);
  }, [open]);
  const close = () => {
    setOpen(false);
    button.current?.focus();
  };
  // Fixed to the viewport beside its button, so no scrolling container clips it; upward near the bottom.
  const toggle = () => {
    const rect = button.current?.getBoundingClientRect();
    if (rect) {
      const right = `${Math.max(4, innerWidth - rect.right)}px`;
      setPlace(rect.bottom + 280 > innerHeight ? { right, bottom: `${innerHeight - rect.top}px` } : { right, top: `${rect.bottom}px` });
    }
    setOpen(!open);
  };
  /** @param {KeyboardEvent} e */
  const onKey = (e) => {
    const entries = Array.from(menu.current?.querySelectorAll('[role=menuitem]') ?? []);
    const at = entries.indexOf(/** @type {Element} */ (document.activeElement));
    let next = -1;
    if (e.key === 'ArrowDown') next = (at + 1) % entries.length;
    else if (e.key === 'ArrowUp') next = (at - 1 + entries.length) % entries.length;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = entries.length - 1;
    else if (e.key === 'Escape' || e.key === 'Tab') {
      e.preventDefault();
      close();
      return;
    }
    if (next >= 0) {
      e.preventDefault();
      /** @type {HTMLElement} */ (entries[next]).focus();
    }
  };
  return html`<span class="menu-wrap">
    <button type="button" ref=${button} class="icon" aria-label=${label} aria-haspopup="menu" aria-expanded=${open ? 'true' : 'false'}
      onClick=${toggle}>⋯</button>
    ${open &&
    html`<div role="menu" ref=${menu} aria-label=${label} class="menu" style=${place} onKeyDown=${onKey}>
      ${items.map(
        (item) => html`<button type="button" role="menuitem" tabindex="-1" class=${item.danger ? 'danger' : ''}
          onClick=${() => {
            setOpen(false);
            item.run();
          }}>${item.label}</button>`,
      )}
    </div>`}
  </span>`;
}

/** One formatter for every time shown: `toLocaleString` with options builds a new one per call, which a listing redrawn during a drop of thousands of files pays per row. */
const TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** @param {string} iso */
export function formatTime(iso) {
  return iso ? TIME.format(new Date(iso)) : '';
}
