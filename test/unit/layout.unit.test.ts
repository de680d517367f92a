import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

/** Every .ts/.svelte file under `dir`. */
function sources(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts|svelte)$/.test(e.name))
    .map((e) => path.join(e.parentPath, e.name));
}

const importsOf = (file: string) => [...fs.readFileSync(file, 'utf8').matchAll(/(?:from\s+|import\s*\(\s*|require\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1] as string);

/** The layout rule of DESIGN.md: `vscode` only in extension/vscode and test/integration; core and engines stay pure. */
describe('layout: import rules', () => {
  it('imports vscode only in extension/vscode/** (and test/integration/**)', () => {
    const offenders = ['extension', 'engines', 'schemas', 'webview']
      .flatMap(sources)
      .filter((f) => !f.startsWith(path.join('extension', 'vscode') + path.sep))
      .filter((f) => importsOf(f).includes('vscode'));
    assert.deepEqual(offenders, []);
  });

  it('keeps extension/core and engines free of the adapter, the CLI and the DOM', () => {
    const offenders = [...sources('extension/core'), ...sources('engines')].filter((f) =>
      importsOf(f).some((i) => /(^|\/)(vscode|cli)(\/|$)/.test(i) || i === 'svelte'),
    );
    assert.deepEqual(offenders, []);
  });

  it('keeps Svelte and the DOM in webview/**, and webview/** free of Node, vscode and the extension (types from schemas/ only)', () => {
    const svelteOutside = ['extension', 'engines', 'schemas'].flatMap(sources).filter((f) => importsOf(f).some((i) => i === 'svelte' || i.startsWith('svelte/') || i.endsWith('.svelte')));
    assert.deepEqual(svelteOutside, []);
    const domOutside = ['extension', 'engines', 'schemas'].flatMap(sources).filter((f) => /(?<![\w.])(document|window)\.[a-zA-Z]/.test(fs.readFileSync(f, 'utf8')));
    assert.deepEqual(domOutside, []);
    const webview = sources('webview');
    assert.ok(webview.length > 5);
    const offenders = webview.filter((f) => importsOf(f).some((i) => i.startsWith('node:') || i === 'vscode' || /(^|\/)extension\//.test(i)));
    assert.deepEqual(offenders, []);
  });

  it('finds the sources it checks (the rule cannot pass vacuously)', () => {
    assert.ok(sources('extension/core').length > 10);
    assert.ok(sources('extension/vscode').some((f) => importsOf(f).includes('vscode')));
  });
});
