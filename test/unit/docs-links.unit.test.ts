import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

// The documentation is read by people who cannot ask: docs/architecture.md is the map a newcomer reads first, and every
// citation of a doc page and a section in it, in a doc or a comment must lead somewhere. These checks fail when a move leaves the map or a
// citation pointing at a file, a function or a section that is no longer there.

const ROOT = path.resolve(__dirname, '../..');
const DOCS = path.join(ROOT, 'docs');
const MAP = path.join(DOCS, 'architecture.md');
/** Folders a short path in the docs is read against, in order: `core/run/x.ts` means extension/core/run/x.ts. */
const BASES = ['', 'extension', 'extension/core', 'extension/core/run'];
/** Where comments may cite docs. */
const SOURCE_DIRS = ['extension', 'engines', 'schemas', 'webview/src', 'test', '.ci'];

const read = (file: string) => fs.readFileSync(file, 'utf8');
const docFiles = () =>
  fs
    .readdirSync(DOCS)
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join(DOCS, f));

/** The repository file a path written in a doc means, or null. */
function resolveDocPath(p: string): string | null {
  for (const base of BASES) {
    const full = path.join(ROOT, base, p);
    if (fs.existsSync(full)) return full;
  }
  return null;
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The names a document can be cited by: its headings' texts and its bold labels, normalised. */
function sectionNames(text: string): string[] {
  const headings = [...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => m[1] as string);
  const bold = [...text.matchAll(/\*\*([^*\n]+)\*\*/g)].map((m) => m[1] as string);
  return [...headings, ...bold].map(norm);
}
const norm = (s: string) => s.replace(/`/g, '').replace(/\s+/g, ' ').trim().replace(/[.:]$/, '').toLowerCase();

function walk(dir: string, out: string[] = []): string[] {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'generated' || (e.name.startsWith('.') && e.name !== '.ci')) continue;
    const full = path.join(dir, e.name);
    if (e.isDirectory()) walk(full, out);
    else if (/\.(ts|cjs|mjs|pl|svelte|md|sh)$/.test(e.name) || e.name === 'run') out.push(full);
  }
  return out;
}

describe('docs: the map and every citation lead somewhere', () => {
  it('docs/architecture.md stays a map: under 250 lines (the detail goes to the topic pages beside it)', () => {
    const lines = read(MAP).split('\n').length;
    assert.ok(lines < 250, `docs/architecture.md has ${lines} lines; move detail to a topic page it links`);
  });

  it('every path docs/architecture.md names exists', () => {
    const text = read(MAP);
    const paths = new Set([...text.matchAll(/(?<![\w<>/.-])((?:[\w.-]+\/)+[\w.-]*\.(?:ts|cjs|mjs|pl|json|md))\b/g)].map((m) => m[1] as string));
    assert.ok(paths.size > 40, `expected the map to name many files, found ${paths.size}`);
    const missing = [...paths].filter((p) => !p.startsWith('runs/') && resolveDocPath(p) === null);
    assert.deepEqual(missing, [], 'paths in docs/architecture.md that no longer exist');
  });

  it("the map's worked example names files and functions that exist, each function in a file its answer cites", () => {
    const text = read(MAP);
    const section = text.split(/^## Worked example.*$/m)[1]?.split(/^## /m)[0];
    assert.ok(section, 'docs/architecture.md has no "## Worked example" section');
    const answers = section.split(/^- /m).slice(1);
    assert.equal(answers.length, 4, 'four answers: (a) check environment, (b) best-of-N winner, (c) rerun unblocks, (d) seal commits');
    for (const answer of answers) {
      const files = [...answer.matchAll(/((?:[\w.-]+\/)+[\w.-]+\.ts)\b/g)].map((m) => m[1] as string);
      assert.ok(files.length > 0, `an answer cites no file: ${answer.slice(0, 80)}`);
      const sources = files.map((f) => {
        const full = resolveDocPath(f);
        assert.ok(full, `the worked example cites ${f}, which does not exist`);
        return read(full);
      });
      const names = [...answer.matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((m) => m[1] as string);
      assert.ok(names.length > 0, `an answer names no function: ${answer.slice(0, 80)}`);
      for (const name of names) {
        const word = new RegExp(`\\b${name.replace(/\$/g, '\\$')}\\b`);
        assert.ok(
          sources.some((s) => word.test(s)),
          `the worked example names \`${name}\`, found in none of ${files.join(', ')}`,
        );
      }
    }
  });

  it('every relative link in README.md and docs/*.md leads to a file, and its #anchor to a heading there', () => {
    const bad: string[] = [];
    for (const file of [path.join(ROOT, 'README.md'), ...docFiles()]) {
      for (const m of read(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/i.test(target)) continue;
        const [rel, anchor] = target.split('#') as [string, string | undefined];
        const dest = rel ? path.resolve(path.dirname(file), rel) : file;
        if (!fs.existsSync(dest)) {
          bad.push(`${path.relative(ROOT, file)}: ${target} (no such file)`);
          continue;
        }
        if (anchor && dest.endsWith('.md')) {
          const anchors = [...read(dest).matchAll(/^#{1,6}\s+(.+)$/gm)].map((h) => slug(h[1] as string));
          if (!anchors.includes(anchor)) bad.push(`${path.relative(ROOT, file)}: ${target} (no heading with that anchor)`);
        }
      }
    }
    assert.deepEqual(bad, []);
  });

  it('every citation of a docs page and "Section" in the docs and the code names a file and a heading or bold label in it', () => {
    const docNames = new Set(docFiles().map((f) => path.basename(f)));
    const bad: string[] = [];
    let seen = 0;
    const files = [path.join(ROOT, 'README.md'), ...docFiles(), ...SOURCE_DIRS.flatMap((d) => walk(path.join(ROOT, d)))];
    for (const file of files) {
      const text = read(file);
      const inDocs = path.dirname(file) === DOCS;
      // docs/<page>.md "Section", or inside docs/ also <page>.md "Section" and [<page>.md](<page>.md) "Section"; a comment's line break
      // (with its `//`, `*` or `#`) may fall between the two or inside the quotes.
      const gap = String.raw`(?:\s|\/\/|\*(?!\*)|#)*`;
      const re = new RegExp(String.raw`(?<![\w/-])(docs\/)?([\w-]+\.md)(?:\]\([^)]*\))?,?${gap}"([^"]{1,80})"`, 'g');
      for (const m of text.matchAll(re)) {
        const [, prefix, name, rawSection] = m as unknown as [string, string | undefined, string, string];
        if (!prefix && !inDocs) continue;
        if (!docNames.has(name)) {
          if (prefix) bad.push(`${path.relative(ROOT, file)}: docs/${name} does not exist`);
          continue;
        }
        seen++;
        const section = norm(rawSection.replace(/\n\s*(?:\/\/|\*|#)?\s*/g, ' '));
        const names = sectionNames(read(path.join(DOCS, name)));
        if (!names.some((n) => n === section || n.startsWith(`${section} `) || n.startsWith(`${section}:`) || n.startsWith(`${section} (`))) {
          bad.push(`${path.relative(ROOT, file)}: docs/${name} "${rawSection}" (no such heading or bold label)`);
        }
      }
    }
    assert.ok(seen > 20, `expected many citations, found ${seen}`);
    assert.deepEqual(bad, []);
  });

  it('no doc or code cites docs/architecture.md for a section that moved to a topic page', () => {
    const names = sectionNames(read(MAP));
    const stale: string[] = [];
    const files = [path.join(ROOT, 'README.md'), ...docFiles(), ...SOURCE_DIRS.flatMap((d) => walk(path.join(ROOT, d)))];
    for (const file of files) {
      for (const m of read(file).matchAll(/architecture\.md(?:\]\([^)]*\))?(?:\s|\/\/|\*(?!\*)|#)*"([^"]{1,60})"/g)) {
        const section = norm((m[1] as string).replace(/\n\s*(?:\/\/|\*|#)?\s*/g, ' '));
        if (!names.some((n) => n === section || n.startsWith(`${section} `))) stale.push(`${path.relative(ROOT, file)}: "${m[1]}"`);
      }
    }
    assert.deepEqual(stale, []);
  });
});
