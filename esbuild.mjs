// One esbuild options object per target; `node esbuild.mjs --watch` rebuilds on change. Type-checking is separate:
// `npx tsc -p .` (strict, noEmit).
import * as esbuild from 'esbuild';
import sveltePlugin from 'esbuild-svelte';
import fs from 'node:fs';
import { warningFilter } from './webview/svelte.config.js';
import { writeValidators } from './schemas/validators.build.mjs';

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
  // The CLI is ESM with code splitting, so a subcommand loads only its own modules (`verdict --version` parses a few
  // kB, not the 3 MB of everything): dist/cli.mjs is the command table, each handler `import()`s its command, and
  // heavy dependencies (sql.js, pg, pg-boss, the hud server) sit in chunks loaded on first use. Chunks are
  // dist/cli-*.mjs, beside the entry, so `import.meta.url` still names dist/ (sql-wasm.wasm and spawn-helper.cjs are
  // found there). dist/cli.js (the `bin`, and what the extension spawns) is a CommonJS stub that imports it.
  {
    ...node,
    format: 'esm',
    splitting: true,
    entryPoints: { cli: 'extension/cli/index.ts' },
    outdir: 'dist',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'cli-[name]-[hash]',
    // Bundled CommonJS dependencies call require() for Node's modules and read __dirname (sql.js); ESM has neither, so
    // each output file gets its own (every file is in dist/, so __dirname is dist/ as it was for the one CJS bundle).
    // __dirname and __filename go through define: a bundled ES module may declare its own (`open` does).
    define: { __dirname: '__verdict_dirname', __filename: '__verdict_filename' },
    banner: {
      js: [
        "import { createRequire as __verdictCreateRequire } from 'node:module';",
        "import { fileURLToPath as __verdictFileURLToPath } from 'node:url';",
        "import { dirname as __verdictDirname } from 'node:path';",
        'const require = __verdictCreateRequire(import.meta.url);',
        'const __verdict_filename = __verdictFileURLToPath(import.meta.url);',
        'const __verdict_dirname = __verdictDirname(__verdict_filename);',
      ].join('\n'),
    },
    external: ['pg-native'],
  },
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

// The JSON Schemas' validators, compiled ahead of time (Ajv standalone code) into schemas/generated/<name>.js (one each),
// which the bundles import: no process compiles a schema at run time. Rewritten only when a schema changed.
writeValidators();

// A production build (the .vsix's, `vscode:prepublish`) starts from an empty dist/: no dev source maps left behind.
if (production) fs.rmSync('dist', { recursive: true, force: true });
fs.mkdirSync('dist', { recursive: true });
// package.json says "type": "module" for the sources; the bundles in dist/ are CommonJS.
fs.writeFileSync('dist/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');
// sql.js (the eval index) loads its wasm at run time; extension/core/store/sqljs.ts looks beside the bundle first.
fs.copyFileSync('node_modules/sql.js/dist/sql-wasm.wasm', 'dist/sql-wasm.wasm');
// The spawn helper runs as its own small perl (or, without perl, Node) process (core/process/spawner.ts looks beside
// the bundle first).
fs.copyFileSync('extension/core/process/spawn-helper.pl', 'dist/spawn-helper.pl');
fs.copyFileSync('extension/core/process/spawn-helper.cjs', 'dist/spawn-helper.cjs');
// The CLI's chunks are named by content hash: a one-shot build removes the previous build's, so dist/ holds exactly
// the chunks dist/cli.mjs imports (the .vsix ships dist/*.mjs).
if (!watch) for (const f of fs.readdirSync('dist')) if (/^cli(-.*\.mjs|\.mjs|\.js)(\.map)?$/.test(f)) fs.rmSync(`dist/${f}`);
// `bin` and the extension run dist/cli.js: a CommonJS stub (dist/package.json says commonjs) for the ESM entry.
fs.writeFileSync(
  'dist/cli.js',
  "#!/usr/bin/env node\n// The verdict CLI: its code is dist/cli.mjs and the chunks it loads (esbuild.mjs).\nimport('./cli.mjs');\n",
);

if (watch) {
  for (const t of targets) await (await esbuild.context(t)).watch();
} else {
  const started = Date.now();
  const results = await Promise.all(targets.map((t) => esbuild.build({ ...t, metafile: true })));
  fs.chmodSync('dist/cli.js', 0o755);
  const outputs = results.flatMap((r) => Object.entries(r.metafile.outputs)).filter(([file]) => /\.(js|mjs|css)$/.test(file));
  const size = (bytes) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${Math.round(bytes / 1e3)} kB`);
  const chunks = outputs.filter(([file]) => /^dist\/cli-.*\.mjs$/.test(file));
  const listed = outputs.filter(([file]) => !/^dist\/cli-.*\.mjs$/.test(file)).map(([file, o]) => `${file} ${size(o.bytes)}`);
  listed.push(`${chunks.length} CLI chunks ${size(chunks.reduce((n, [, o]) => n + o.bytes, 0))}`);
  console.log(
    `built ${listed.join(', ')} in ${Date.now() - started} ms (${production ? 'production: minified, no source maps' : 'development: source maps; --production minifies'})`,
  );
}
