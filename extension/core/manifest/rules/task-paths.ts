/** How the rules read the paths in a manifest: expect_files entries relative to the task dir, paths named in specs. */
import path from 'node:path';

/** Where an expect_files entry points, judged relative to the task dir. */
export type ExpectedPlace = 'inside' | 'absolute' | 'escapes';

/**
 * A relative path already in normal form (no backslash, no leading or trailing `/`, no empty, `.` or `..` segment, no
 * drive letter): inside the task dir and its own normalized spelling, told by one native test (most expect_files).
 */
const PLAIN_RELATIVE = /^(?![A-Za-z]:)(?!\.\.?(?:\/|$))[^/\\]+(?:\/(?!\.\.?(?:\/|$))[^/\\]+)*$/;

/** `inside` the task dir, `absolute`, or `escapes` it with `..`. */
export function placeOf(file: string): ExpectedPlace {
  if (PLAIN_RELATIVE.test(file)) return 'inside';
  if (path.posix.isAbsolute(file) || path.win32.isAbsolute(file)) return 'absolute';
  const norm = normalizeRelative(file);
  return norm === '..' || norm.startsWith('../') ? 'escapes' : 'inside';
}

/** A relative path in one spelling: forward slashes, no `./`, no `a/../`. */
export function normalizeRelative(file: string): string {
  if (PLAIN_RELATIVE.test(file)) return file;
  return path.posix.normalize(file.replace(/\\/g, '/')).replace(/\/$/, '');
}

/** File extensions that make a word in a spec a file path (source, config, docs, data). */
const EXTENSIONS = [
  'ts',
  'tsx',
  'mts',
  'cts',
  'js',
  'jsx',
  'mjs',
  'cjs',
  'svelte',
  'vue',
  'py',
  'pyi',
  'rs',
  'go',
  'java',
  'kt',
  'kts',
  'scala',
  'rb',
  'php',
  'c',
  'h',
  'cc',
  'cpp',
  'hpp',
  'cs',
  'fs',
  'swift',
  'm',
  'ex',
  'exs',
  'erl',
  'hs',
  'ml',
  'lua',
  'dart',
  'zig',
  'sh',
  'bash',
  'zsh',
  'ps1',
  'sql',
  'graphql',
  'proto',
  'html',
  'css',
  'scss',
  'sass',
  'less',
  'json',
  'jsonc',
  'yaml',
  'yml',
  'toml',
  'ini',
  'cfg',
  'conf',
  'env',
  'xml',
  'csv',
  'tsv',
  'md',
  'mdx',
  'txt',
  'rst',
  'lock',
  'gradle',
  'tf',
  'dockerfile',
];
// A path is word characters and dots joined by `/`, optionally `./`-prefixed, ending in a known extension, not
// glued to more path characters (so `app.ts.bak` and `v1.2.3` are not taken).
const SPEC_PATH = new RegExp(`(?<![\\w./@~+-])(?:\\./)?(?:[\\w@+-][\\w.@+-]*/)*[\\w@+-][\\w.@+-]*\\.(?:${EXTENSIONS.join('|')})(?![\\w/@+-]|\\.\\w)`, 'gi');
const EXTENSION_AT_END = new RegExp(`\\.(?:${EXTENSIONS.join('|')})$`, 'i');

/** True when `word` ends in a known source, config, docs or data file extension (EXTENSIONS): `x.test.mjs`, `README.md`. */
export function hasFileExtension(word: string): boolean {
  return EXTENSION_AT_END.test(word);
}

/** URLs are blanked out first: `https://example.com/app.js` names no repository file. */
const URL = /\b[a-z][a-z0-9+.-]*:\/\/\S+/gi;
/** Product names that look like files: Node.js, Vue.js, Next.js (capitalised, no folder). */
const PRODUCT_NAME = /^[A-Z][A-Za-z]*\.js$/;

/**
 * Repository file paths a spec names, with their decoded offsets: tokens like `src/app.ts` or `README.md`
 * (a known extension, see EXTENSIONS), normalized (no `./`). Skips URLs, absolute and `..` paths, and product
 * names such as `Node.js`.
 */
export function pathsInSpec(spec: string): { path: string; start: number; end: number }[] {
  const text = spec.replace(URL, (url) => ' '.repeat(url.length));
  const out: { path: string; start: number; end: number }[] = [];
  for (const m of text.matchAll(SPEC_PATH)) {
    const token = m[0];
    if (PRODUCT_NAME.test(token) || placeOf(token) !== 'inside') continue;
    const start = m.index ?? 0;
    out.push({ path: normalizeRelative(token), start, end: start + token.length });
  }
  return out;
}
