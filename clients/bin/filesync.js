#!/usr/bin/env node
'use strict';
// The compiled command; `npm run build` at the project root (or in clients/) produces it.
require('../dist/clients/src/cli/main.js').main(process.argv.slice(2));
