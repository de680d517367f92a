// `npm run typecheck:webview`: svelte-check over webview/ (the Svelte 5 dashboard), which tsconfig.json leaves out.
// svelte-check and its svelte2tsx need TypeScript's JavaScript compiler API, which TypeScript 7 (tsgo, the project's
// type-checker) does not have: typescript-6.cjs makes their `require('typescript')` load TypeScript 6 instead.
// package.json's `overrides` lets svelte-check's peer be the root's typescript so `npm ci` resolves; the hook is what
// actually feeds it TypeScript 6. Extra arguments go to svelte-check (e.g. --watch).
require('./typescript-6.cjs');
const path = require('node:path');

process.argv = [
  process.argv[0],
  'svelte-check',
  '--tsconfig',
  path.join(__dirname, 'webview', 'tsconfig.json'),
  '--fail-on-warnings',
  '--output',
  'human',
  ...process.argv.slice(2),
];
require('svelte-check/bin/svelte-check');
