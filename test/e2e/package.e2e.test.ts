import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import picomatch from 'picomatch';
import { extractZip, packageVsix, zipEntries } from '../helpers/package-vsix.mjs';
import { tempDir } from '../helpers/fixtures';

/** What the .vsix may hold under extension/ (the allow-list of .vscodeignore, as vsce names the files). */
const ALLOWED = [
  'package.json',
  'readme.md',
  'changelog.md',
  'LICENSE.txt',
  'dist/extension.js',
  'dist/cli.js',
  'dist/cli.mjs',
  'dist/cli-*.mjs',
  'dist/package.json',
  'dist/sql-wasm.wasm',
  'dist/spawn-helper.cjs',
  'dist/spawn-helper.pl',
  'dist/webview/*.{js,css}',
  'schemas/*.json',
  'schemas/generated/manifest.editor.schema.json',
  'extension/vscode/media/*.{svg,png}',
  'examples/demo/*',
  'docs/*.md',
  'docs/images/*.png',
  'templates/**',
];
/** What it must hold: the bundles, the wasm, the schemas, the demo, the icon, the legal and user docs. */
const REQUIRED = [
  'package.json',
  'readme.md',
  'changelog.md',
  'LICENSE.txt',
  'dist/extension.js',
  'dist/cli.js',
  'dist/cli.mjs',
  'dist/sql-wasm.wasm',
  'dist/spawn-helper.cjs',
  'dist/spawn-helper.pl',
  'dist/webview/dashboard.js',
  'dist/webview/dashboard.css',
  'dist/webview/themes.css',
  'schemas/manifest.schema.json',
  'schemas/engine.schema.json',
  'schemas/generated/manifest.editor.schema.json',
  'examples/demo/demo.swarm.json',
  'extension/vscode/media/verdict.png',
  'templates/fan-out/fan-out.swarm.json',
  'templates/test-hardening/checks/mutants.sh',
];
const MAX_BYTES = 2 * 1024 * 1024;

/** `npm run package`: the production build and the .vsix a user installs. */
describe('the .vsix (npm run package)', function () {
  this.timeout(300000);
  let built: ReturnType<typeof packageVsix>;
  let names: string[];
  before(() => {
    built = packageVsix(path.resolve('.'));
    assert.equal(built.exitCode, 0, built.output);
    names = zipEntries(built.vsix)
      .map((e) => e.name)
      .filter((n) => n.startsWith('extension/'))
      .map((n) => n.slice('extension/'.length));
  });
  after(() => fs.rmSync(built.dir, { recursive: true, force: true }));

  it('builds with the production build, without warnings (no esbuild ⚠️, nothing vsce warns about)', () => {
    assert.match(built.output, /node esbuild\.mjs --production/);
    assert.match(built.output, /production: minified, no source maps/);
    assert.doesNotMatch(built.output, /⚠️|WARNING|warn/i);
  });

  it('a development build (node esbuild.mjs) prints one line of sizes, no esbuild ⚠️ either', async () => {
    const dev = await execa(process.execPath, ['esbuild.mjs'], { cwd: built.dir, reject: false, all: true, stdin: 'ignore' });
    assert.equal(dev.exitCode, 0, dev.all);
    assert.match(
      dev.all ?? '',
      /^built dist\/extension\.js [\d.]+ [kM]B, dist\/cli\.mjs [\d.]+ [kM]B, .* \(development: source maps; --production minifies\)$/m,
    );
    assert.doesNotMatch(dev.all ?? '', /⚠️/);
  });

  it(`is at most 2 MB and holds only the allow-listed files, and every required one`, () => {
    const size = fs.statSync(built.vsix).size;
    assert.ok(size <= MAX_BYTES, `${size} bytes`);
    const allowed = picomatch(ALLOWED);
    assert.deepEqual(
      names.filter((n) => !allowed(n)),
      [],
      'files that should not ship',
    );
    assert.deepEqual(
      REQUIRED.filter((n) => !names.includes(n)),
      [],
      'files missing',
    );
    assert.ok(!names.some((n) => /\.map$|node_modules|^test\/|\.ts$/.test(n)));
  });

  it('ships every chunk of the split CLI: each one an .mjs file imports, none left over from another build', () => {
    const dir = tempDir();
    extractZip(built.vsix, dir);
    const shipped = names.filter((n) => /^dist\/cli.*\.mjs$/.test(n));
    const imported = new Set(['dist/cli.mjs']);
    for (const n of shipped)
      for (const m of fs.readFileSync(path.join(dir, 'extension', n), 'utf8').matchAll(/(?:from ?|import\()"\.\/(cli-[^"]+\.mjs)"/g))
        imported.add(`dist/${m[1]}`);
    assert.ok(shipped.length > 10, `only ${shipped.length} CLI files: is the CLI still split?`);
    assert.deepEqual(
      [...imported].filter((n) => !shipped.includes(n)),
      [],
      'chunks imported but not shipped',
    );
    assert.deepEqual(
      shipped.filter((n) => !imported.has(n)),
      [],
      'chunks shipped that nothing imports',
    );
  });

  it('installed as it is, works: the manifest names files it ships, the CLI runs, the README links resolve', async () => {
    const dir = tempDir();
    extractZip(built.vsix, dir);
    const ext = path.join(dir, 'extension');
    const pkg = JSON.parse(fs.readFileSync(path.join(ext, 'package.json'), 'utf8'));
    for (const file of [pkg.main, pkg.icon, ...pkg.contributes.jsonValidation.map((v: { url: string }) => v.url)])
      assert.ok(fs.existsSync(path.join(ext, file)), `package.json names ${file}, not in the .vsix`);
    assert.doesNotMatch(fs.readFileSync(path.join(ext, 'dist/extension.js'), 'utf8'), /sourceMappingURL/);
    // The bundled CLI from the package alone (no node_modules beside it): lint of the shipped demo.
    const lint = await execa(process.execPath, [path.join(ext, 'dist/cli.js'), 'lint', path.join(ext, 'examples/demo/demo.swarm.json')], {
      reject: false,
      all: true,
      stdin: 'ignore',
    });
    assert.equal(lint.exitCode, 0, lint.all);
    assert.match(lint.stdout, /0 error\(s\), 0 warning\(s\), 0 note\(s\)/);
    // The templates ship where `verdict init` reads them.
    const init = await execa(process.execPath, [path.join(ext, 'dist/cli.js'), 'init', '--list'], { reject: false, all: true, stdin: 'ignore' });
    assert.equal(init.exitCode, 0, init.all);
    assert.ok(init.stdout.split('\n').length >= 8, init.stdout);
    // A run from the package alone: its steps are started by the spawn helper shipped beside the bundle.
    const work = tempDir();
    const manifest = path.join(work, 'one.swarm.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        workdir: 'w',
        tasks: [{ key: 't', engine: 'script', spec: 'echo ok > out.txt', check: 'test -s out.txt', verified: 'out.txt written' }],
      }),
    );
    const run = await execa(
      process.execPath,
      [path.join(ext, 'dist/cli.js'), 'run', manifest, '--home', path.join(work, 'home'), '--no-dashboard', '--no-sandbox'],
      { reject: false, all: true, stdin: 'ignore' },
    );
    assert.equal(run.exitCode, 0, run.all);
    assert.match(run.stdout, /1\/1 passed/);
    // The scoreboard from the package: its chunk loads sql.js, which finds the wasm shipped beside the bundle.
    const models = await execa(process.execPath, [path.join(ext, 'dist/cli.js'), 'models', '--home', path.join(work, 'home'), '--json'], {
      reject: false,
      all: true,
      stdin: 'ignore',
    });
    assert.equal(models.exitCode, 0, models.all);
    assert.equal(JSON.parse(models.stdout).source.rows, 1);
    // README links are kept relative (--no-rewrite-relative-links): each must name a file in the package.
    const readme = fs.readFileSync(path.join(ext, 'readme.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)#\s]+)\)/g)].map((m) => m[1] as string).filter((l) => !/^[a-z]+:/i.test(l));
    assert.ok(links.length > 5);
    assert.deepEqual(
      links.filter((l) => !fs.existsSync(path.join(ext, l))),
      [],
      'README links to files the .vsix does not ship',
    );
  });
});
