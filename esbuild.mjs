// One esbuild options object per target; `node esbuild.mjs --watch` rebuilds on change. Type-checking is separate:
// `npx tsc -p .` (strict, noEmit).
import * as esbuild from 'esbuild';
import sveltePlugin from 'esbuild-svelte';
import fs from 'node:fs';
import { warningFilter } from './webview/svelte.config.js';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');
// esbuild's own summary (logLevel info) marks every output over 1 MB with ⚠️, a hint meant for bundles sent to a
// browser. Ours are Node bundles loaded from disk, and the CLI is one file on purpose (it bundles its dependencies so
// the .vsix ships no node_modules): a one-shot build prints warnings and errors only, then one line of sizes (below).
// Watch mode keeps info: its "[watch] build started/finished" lines drive the problem matcher in .vscode/tasks.json.
const logLevel = watch ? 'info' : 'warning';

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
  logLevel,
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
    logLevel,
  },
];

// A production build (the .vsix's, `vscode:prepublish`) starts from an empty dist/: no dev source maps left behind.
if (production) fs.rmSync('dist', { recursive: true, force: true });
fs.mkdirSync('dist', { recursive: true });
// package.json says "type": "module" for the sources; the bundles in dist/ are CommonJS.
fs.writeFileSync('dist/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');
// sql.js (the eval index) loads its wasm at run time; extension/core/store/sqljs.ts looks beside the bundle first.
fs.copyFileSync('node_modules/sql.js/dist/sql-wasm.wasm', 'dist/sql-wasm.wasm');
// The spawn helper runs as its own small Node process (core/process/spawner.ts looks beside the bundle first).
fs.copyFileSync('extension/core/process/spawn-helper.cjs', 'dist/spawn-helper.cjs');

if (watch) {
  for (const t of targets) await (await esbuild.context(t)).watch();
} else {
  const started = Date.now();
  const results = await Promise.all(targets.map((t) => esbuild.build({ ...t, metafile: true })));
  fs.chmodSync('dist/cli.js', 0o755);
  const outputs = results.flatMap((r) => Object.entries(r.metafile.outputs)).filter(([file]) => /\.(js|css)$/.test(file));
  const size = (bytes) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${Math.round(bytes / 1e3)} kB`);
  console.log(`built ${outputs.map(([file, o]) => `${file} ${size(o.bytes)}`).join(', ')} in ${Date.now() - started} ms (${production ? 'production: minified, no source maps' : 'development: source maps; --production minifies'})`);
}
