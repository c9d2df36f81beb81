// Passing notices ("Deleted report.pdf", with Undo) announced politely to screen readers.
import { signal } from '@preact/signals';
import { html } from './html.js';

/** @typedef {{ id: number, message: string, action?: { label: string, run: () => void } }} Toast */
/** @type {import('@preact/signals').Signal<Toast[]>} */
const toasts = signal([]);
let counter = 0;

/** @param {string} message @param {{ label: string, run: () => void }} [action] @param {number} [ms] */
export function notify(message, action, ms = 10000) {
  const id = ++counter;
  toasts.value = [...toasts.value.slice(-3), { id, message, action }];
  setTimeout(() => dismiss(id), ms);
}

/** @param {number} id */
function dismiss(id) {
  toasts.value = toasts.value.filter((t) => t.id !== id);
}

export function Toasts() {
  return html`<div class="toasts" role="status" aria-live="polite">
    ${toasts.value.map(
      (t) => html`<div class="toast" key=${t.id}>
        <span>${t.message}</span>
        ${t.action &&
        html`<button type="button" onClick=${() => {
          dismiss(t.id);
          t.action?.run();
        }}>${t.action.label}</button>`}
      </div>`,
    )}
  </div>`;
}
