import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { SqlJsStatic } from 'sql.js';

/** The wasm file sql.js needs, as esbuild.mjs copies it next to the bundles in dist/. */
export const SQL_WASM_FILE = 'sql-wasm.wasm';

let loading: Promise<SqlJsStatic> | null = null;

/**
 * Where sql-wasm.wasm is: beside the running bundle (dist/, where esbuild.mjs copies it), else in the sql.js
 * package (running from sources with tsx).
 * @throws Error listing the places looked at when neither has it
 */
export function sqlWasmPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const tried = [path.join(here, SQL_WASM_FILE)];
  try {
    tried.push(createRequire(import.meta.url).resolve(`sql.js/dist/${SQL_WASM_FILE}`));
  } catch {
    // not installed beside us: only the bundled copy can serve
  }
  const found = tried.find((p) => fs.existsSync(p));
  if (!found) throw new Error(`sql.js's ${SQL_WASM_FILE} was not found (looked at ${tried.join(', ')}); rebuild with node esbuild.mjs`);
  return found;
}

/**
 * sql.js (SQLite compiled to wasm), loaded once per process, and only when asked for: its module is imported here,
 * so a scoreboard answered from its caches (groups.json, the columns) never loads it.
 */
export function loadSqlJs(): Promise<SqlJsStatic> {
  loading ??= import('sql.js').then(({ default: initSqlJs }) => initSqlJs({ wasmBinary: fs.readFileSync(sqlWasmPath()) as unknown as ArrayBuffer }));
  return loading;
}
