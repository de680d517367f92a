// Makes `require('typescript')` (and `typescript/…`) load TypeScript 6 (installed under the npm alias `typescript-6`).
// The project type-checks with TypeScript 7 (tsgo), which has no JavaScript compiler API; the tools that need that API
// (svelte-check with svelte2tsx, typescript-eslint) accept TypeScript 5 or 6 only. They load it with CommonJS
// `require`, so rewriting the request in Node's resolver is enough. Required by typecheck-webview.cjs and
// eslint.config.mjs before they load those tools.
const Module = require('node:module');

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'typescript' || request.startsWith('typescript/')) request = 'typescript-6' + request.slice('typescript'.length);
  return resolve.call(this, request, ...rest);
};

const major = Number(require('typescript/package.json').version.split('.')[0]);
if (major !== 6) throw new Error(`typescript-6.cjs: expected TypeScript 6 under the alias typescript-6, found ${major}`);
