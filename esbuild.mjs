// One esbuild options object per target; `node esbuild.mjs --watch` rebuilds on change. Type-checking is separate:
// `npx tsc -p .` (strict, noEmit).
import * as esbuild from 'esbuild';
import sveltePlugin from 'esbuild-svelte';
import fs from 'node:fs';
import { warningFilter } from './webview/svelte.config.js';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

// The bundles are CommonJS (VS Code loads extensions with require); import.meta.url is rebuilt from __filename.
const node = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // jsonc-parser's "main" is a UMD build esbuild cannot follow; its ESM build bundles cleanly.
  mainFields: ['module', 'main'],
  sourcemap: !production,
  minify: production,
  logLevel: 'info',
  define: { 'import.meta.url': 'import_meta_url' },
  banner: { js: "const import_meta_url = require('node:url').pathToFileURL(__filename).href;" },
};

const targets = [
  { ...node, entryPoints: ['extension/vscode/extension.ts'], outfile: 'dist/extension.js', external: ['vscode'] },
  { ...node, entryPoints: ['extension/cli/index.ts'], outfile: 'dist/cli.js', banner: node.banner, external: ['pg-native'] },
  // The dashboard (Svelte 5) for both hosts: dashboard.js + dashboard.css (component CSS emitted as a file, never
  // injected: the page's CSP has no 'unsafe-inline'), and themes.css, the browser host's --vscode-* colour sets.
  {
    entryPoints: { dashboard: 'webview/main.ts', themes: 'webview/themes.css' },
    outdir: 'dist/webview',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['svelte', 'browser'],
    mainFields: ['svelte', 'browser', 'module', 'main'],
    plugins: [
      sveltePlugin({
        compilerOptions: { css: 'external', dev: false },
        // The same filter svelte-check uses (webview/svelte.config.js): no a11y interactivity warnings on toolkit
        // elements, whose keyboard handling Svelte cannot know.
        filterWarnings: warningFilter,
      }),
    ],
    sourcemap: !production,
    minify: true,
    logLevel: 'info',
  },
];

fs.mkdirSync('dist', { recursive: true });
// package.json says "type": "module" for the sources; the bundles in dist/ are CommonJS.
fs.writeFileSync('dist/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');
// sql.js (the eval index) loads its wasm at run time; extension/core/store/sqljs.ts looks beside the bundle first.
fs.copyFileSync('node_modules/sql.js/dist/sql-wasm.wasm', 'dist/sql-wasm.wasm');

if (watch) {
  for (const t of targets) await (await esbuild.context(t)).watch();
} else {
  await Promise.all(targets.map((t) => esbuild.build(t)));
  fs.chmodSync('dist/cli.js', 0o755);
}
