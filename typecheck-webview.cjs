// `npm run typecheck:webview`: svelte-check over webview/ (the Svelte 5 dashboard), which tsconfig.json leaves out.
// The project type-checks with TypeScript 7 (tsgo), which has no JavaScript compiler API; svelte-check and its
// svelte2tsx need that API (peer typescript ^5 || ^6). So TypeScript 6 is installed beside 7 under the npm alias
// `typescript-6`, and this wrapper makes svelte-check's `require('typescript')` (and `typescript/…`) load it.
// package.json's `overrides` lets svelte-check's peer be the root's typescript so `npm ci` resolves; this wrapper is
// what actually feeds it TypeScript 6. Extra arguments go to svelte-check (e.g. --watch).
const Module = require('node:module');
const path = require('node:path');

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'typescript' || request.startsWith('typescript/')) request = 'typescript-6' + request.slice('typescript'.length);
  return resolve.call(this, request, ...rest);
};

const major = Number(require('typescript/package.json').version.split('.')[0]);
if (major !== 6) throw new Error(`typecheck-webview: expected TypeScript 6 under the alias typescript-6, found ${major}`);

process.argv = [process.argv[0], 'svelte-check', '--tsconfig', path.join(__dirname, 'webview', 'tsconfig.json'), '--fail-on-warnings', '--output', 'human', ...process.argv.slice(2)];
require('svelte-check/bin/svelte-check');
