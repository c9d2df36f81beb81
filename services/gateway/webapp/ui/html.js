// htm bound to Preact: templates are tagged strings, so no JSX compile step and no eval.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
