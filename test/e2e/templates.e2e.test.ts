import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'jsonc-parser';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, tempDir } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// Every template (templates/<id>/) runs end to end with the script engine: `verdict init` writes it into a fixture
// repository, each task's engine becomes `script` and its spec a script that does the work (every task PASSes) or
// one that does not (every task FAILs on the template's own check). Reviewers become custom engines (the script engine
// cannot review). Only the engines and specs change: the checks, paths and guards are the template's.

type Specs = Record<string, string>;
interface Fixture {
  /** Files of the project the template is written into (path → content). */
  files: Record<string, string>;
  /** Task key → script that does the work. */
  good: Specs;
  /** Task key → script that does not; the template's check must fail on it. */
  bad: Specs;
}

const file = (p: string, body: string) => `mkdir -p "$(dirname ${p})" && cat > ${p} <<'EOF'\n${body}\nEOF`;
const nodeTest = (imports: string, body: string) =>
  `import test from 'node:test';\nimport assert from 'node:assert/strict';\n${imports}\ntest('t', () => {\n${body}\n});\n`;

const MONEY = `export function splitCents(total, parts) {
  if (!Number.isInteger(total) || total < 0) throw new RangeError('total: ' + total);
  if (!Number.isInteger(parts) || parts < 1) throw new RangeError('parts: ' + parts);
  const base = Math.floor(total / parts);
  const rest = total % parts;
  return Array.from({ length: parts }, (_, i) => base + (i < rest ? 1 : 0));
}`;

const AUTH = `export function authenticate(req) {
  const token = req.headers.authorization;
  if (!token) return null;
  return lookupSession(token.replace('Bearer ', ''));
}
export function allowed(user, action) {
  return user.roles.includes('admin') || user.grants.includes(action);
}`;

const REPORT = (citations: string[]) =>
  `# Auth flow\n\n## Answer\n\nauthenticate() reads the bearer token; allowed() checks roles.\n\n## Evidence\n\n${citations.join('\n')}\n\n## Open questions\n\nWhere sessions expire.\n`;

/** The no-model template's own specs (it runs as written: its scripts are the work). */
const noModelSpecs = Object.fromEntries(
  (parse(fs.readFileSync(path.resolve('templates/no-model/no-model.swarm.json'), 'utf8')) as { tasks: { key: string; spec: string }[] }).tasks.map((t) => [
    t.key,
    t.spec,
  ]),
);

const FIXTURES: Record<string, Fixture> = {
  // Brings its own project (src/, test/): the fixture repository is empty.
  'no-model': {
    files: { 'README.md': '# fixture\n' },
    good: noModelSpecs,
    bad: {
      'fix-fahrenheit': "sed -i 's|/ 5 + 23|/ 5 + 23.5|' src/temperature.mjs",
      'word-count': file('src/word-count.mjs', 'export const wordCount = (t) => t.split(" ").length;'),
      'wc-command': 'echo nothing done',
    },
  },
  'fan-out': {
    files: {
      'test/slugify.test.mjs': nodeTest("import { slugify } from '../src/slugify.mjs';", "  assert.equal(slugify(' Hello, World! '), 'hello-world');"),
      'test/parse-duration.test.mjs': nodeTest(
        "import { parseDuration } from '../src/parse-duration.mjs';",
        "  assert.equal(parseDuration('1h30m'), 5400000);\n  assert.throws(() => parseDuration('soon'), RangeError);",
      ),
      'test/format-bytes.test.mjs': nodeTest("import { formatBytes } from '../src/format-bytes.mjs';", "  assert.equal(formatBytes(1536), '1.5 KiB');"),
    },
    good: {
      slugify: file('src/slugify.mjs', "export const slugify = (t) => t.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');"),
      'parse-duration': file(
        'src/parse-duration.mjs',
        "export function parseDuration(t) {\n  const m = /^(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s)?$/.exec(t);\n  if (!m || t === '') throw new RangeError('not a duration: ' + t);\n  return ((+(m[1] ?? 0) * 60 + +(m[2] ?? 0)) * 60 + +(m[3] ?? 0)) * 1000;\n}",
      ),
      'format-bytes': file(
        'src/format-bytes.mjs',
        "export function formatBytes(n) {\n  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];\n  let i = 0;\n  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }\n  return (Math.round(n * 10) / 10) + ' ' + u[i];\n}",
      ),
    },
    bad: {
      slugify: file('src/slugify.mjs', 'export const slugify = (t) => t.toLowerCase();'),
      'parse-duration': file('src/parse-duration.mjs', 'export const parseDuration = (t) => 0;'),
      'format-bytes': 'echo "I could not find the file"',
    },
  },
  'test-hardening': {
    files: { 'src/money.mjs': MONEY },
    good: {
      'money-edge-tests': file(
        'test/money.edge.test.mjs',
        nodeTest(
          "import { splitCents } from '../src/money.mjs';",
          '  assert.deepEqual(splitCents(5, 2), [3, 2]);\n  assert.throws(() => splitCents(-1, 2), RangeError);\n  assert.throws(() => splitCents(5, 0), RangeError);',
        ),
      ),
    },
    // Passes on the code, but checks too little: most mutants survive.
    bad: {
      'money-edge-tests': file(
        'test/money.edge.test.mjs',
        nodeTest("import { splitCents } from '../src/money.mjs';", '  assert.deepEqual(splitCents(4, 2), [2, 2]);'),
      ),
    },
  },
  'docs-sweep': {
    files: {
      'src/strings.mjs': "export function capitalize(s) {\n  return s.charAt(0).toUpperCase() + s.slice(1);\n}\nexport const WORD_SEP = ' ';\n",
      'src/dates.mjs': 'export function isoDay(d) {\n  return d.toISOString().slice(0, 10);\n}\n',
    },
    good: {
      'doc-strings': file('docs/api/strings.md', '# strings\n\n## capitalize(s)\n\nUpper-cases the first character.\n\n## `WORD_SEP`\n\nA space.'),
      'doc-dates': file('docs/api/dates.md', '# dates\n\n## isoDay(d)\n\nThe date part of d.toISOString().'),
    },
    bad: {
      // An invented API and a missing export.
      'doc-strings': file('docs/api/strings.md', '# strings\n\n## capitalize(s)\n\nUpper-cases.\n\n## truncate(s, n)\n\nCuts s.'),
      // An empty section.
      'doc-dates': file('docs/api/dates.md', '# dates\n\n## isoDay(d)\n'),
    },
  },
  migration: {
    files: {
      'src/http.mjs': "export async function get(url) {\n  return 'body:' + url;\n}\n",
      'src/legacy.mjs': "export function legacyFetch(url, cb) {\n  cb(null, 'body:' + url);\n}\n",
      'src/api/users.mjs': "import { legacyFetch } from '../legacy.mjs';\nexport function fetchUser(id, cb) {\n  legacyFetch('/users/' + id, cb);\n}\n",
      'src/jobs/sync.mjs': "import { legacyFetch } from '../legacy.mjs';\nexport function syncAll(cb) {\n  legacyFetch('/sync', cb);\n}\n",
      'test/api/users.test.mjs': nodeTest(
        "import { fetchUser } from '../../src/api/users.mjs';",
        "  return fetchUser(1).then((b) => assert.equal(b, 'body:/users/1'));",
      ),
      'test/jobs/sync.test.mjs': nodeTest(
        "import { syncAll } from '../../src/jobs/sync.mjs';",
        "  return syncAll().then((b) => assert.equal(b, 'body:/sync'));",
      ),
    },
    good: {
      'migrate-api': file(
        'src/api/users.mjs',
        "import * as http from '../http.mjs';\nexport async function fetchUser(id) {\n  return http.get('/users/' + id);\n}",
      ),
      'migrate-jobs': file('src/jobs/sync.mjs', "import * as http from '../http.mjs';\nexport async function syncAll() {\n  return http.get('/sync');\n}"),
    },
    bad: {
      // Passes the tests by wrapping the old call: the old form is still there.
      'migrate-api': file(
        'src/api/users.mjs',
        "import { legacyFetch } from '../legacy.mjs';\nexport const fetchUser = (id) => new Promise((ok, no) => legacyFetch('/users/' + id, (e, b) => (e ? no(e) : ok(b))));",
      ),
      // Removes the call and the behaviour with it.
      'migrate-jobs': file('src/jobs/sync.mjs', 'export async function syncAll() {\n  return null;\n}'),
    },
  },
  'code-review': {
    files: {
      'test/rate-limiter.test.mjs': nodeTest(
        "import { RateLimiter } from '../src/rate-limiter.mjs';",
        '  const r = new RateLimiter({ perSecond: 2 });\n  assert.deepEqual([r.tryTake(0), r.tryTake(10), r.tryTake(20), r.tryTake(1001)], [true, true, false, true]);',
      ),
      'test/lru-cache.test.mjs': nodeTest(
        "import { LruCache } from '../src/lru-cache.mjs';",
        "  const c = new LruCache(2);\n  c.set('a', 1); c.set('b', 2); c.get('a'); c.set('c', 3);\n  assert.deepEqual([c.get('a'), c.get('b'), c.get('c'), c.size], [1, undefined, 3, 2]);",
      ),
    },
    good: {
      'rate-limiter': file(
        'src/rate-limiter.mjs',
        'export class RateLimiter {\n  constructor({ perSecond }) { this.n = perSecond; this.times = []; }\n  tryTake(now) {\n    this.times = this.times.filter((t) => now - t < 1000);\n    if (this.times.length >= this.n) return false;\n    this.times.push(now);\n    return true;\n  }\n}',
      ),
      'lru-cache': file(
        'src/lru-cache.mjs',
        'export class LruCache {\n  constructor(capacity) { this.cap = capacity; this.m = new Map(); }\n  get(k) { if (!this.m.has(k)) return undefined; const v = this.m.get(k); this.m.delete(k); this.m.set(k, v); return v; }\n  set(k, v) { this.m.delete(k); this.m.set(k, v); if (this.m.size > this.cap) this.m.delete(this.m.keys().next().value); }\n  get size() { return this.m.size; }\n}',
      ),
    },
    bad: {
      'rate-limiter': file('src/rate-limiter.mjs', 'export class RateLimiter {\n  tryTake() { return true; }\n}'),
      'lru-cache': file(
        'src/lru-cache.mjs',
        'export class LruCache {\n  constructor() { this.m = new Map(); }\n  get(k) { return this.m.get(k); }\n  set(k, v) { this.m.set(k, v); }\n  get size() { return this.m.size; }\n}',
      ),
    },
  },
  'model-bakeoff': {
    files: {
      'test/csv.test.mjs': nodeTest(
        "import { parseCsv } from '../src/csv.mjs';",
        "  assert.deepEqual(parseCsv('a,\"b,c\"\\r\\n1,2\\n'), [['a', 'b,c'], ['1', '2']]);",
      ),
      'test/intervals.test.mjs': nodeTest(
        "import { mergeIntervals } from '../src/intervals.mjs';",
        '  assert.deepEqual(mergeIntervals([[2, 3], [1, 2], [5, 6]]), [[1, 3], [5, 6]]);\n  assert.throws(() => mergeIntervals([[3, 1]]), RangeError);',
      ),
    },
    good: {
      'csv-parser': file(
        'src/csv.mjs',
        "export function parseCsv(text) {\n  const rows = [];\n  let row = [], f = '', q = false;\n  for (let i = 0; i < text.length; i++) {\n    const c = text[i];\n    if (q) { if (c === '\"' && text[i + 1] === '\"') { f += '\"'; i++; } else if (c === '\"') q = false; else f += c; }\n    else if (c === '\"') q = true;\n    else if (c === ',') { row.push(f); f = ''; }\n    else if (c === '\\n' || c === '\\r') { if (c === '\\r' && text[i + 1] === '\\n') i++; row.push(f); rows.push(row); row = []; f = ''; }\n    else f += c;\n  }\n  if (f !== '' || row.length) { row.push(f); rows.push(row); }\n  return rows;\n}",
      ),
      'interval-merge': file(
        'src/intervals.mjs',
        "export function mergeIntervals(list) {\n  for (const [a, b] of list) if (a > b) throw new RangeError('bad pair ' + a + ',' + b);\n  const s = [...list].sort((x, y) => x[0] - y[0]);\n  const out = [];\n  for (const [a, b] of s) { const l = out[out.length - 1]; if (l && a <= l[1]) l[1] = Math.max(l[1], b); else out.push([a, b]); }\n  return out;\n}",
      ),
    },
    bad: {
      'csv-parser': file('src/csv.mjs', "export const parseCsv = (t) => t.trim().split(/\\r?\\n/).map((l) => l.split(','));"),
      'interval-merge': file('src/intervals.mjs', 'export const mergeIntervals = (l) => l;'),
    },
  },
  research: {
    files: { 'src/auth.mjs': AUTH },
    good: {
      'auth-flow': file(
        'research/auth-flow.md',
        REPORT([
          '- `src/auth.mjs:2` "const token = req.headers.authorization"',
          '- `src/auth.mjs:3` "if (!token) return null"',
          "- `src/auth.mjs:4` \"lookupSession(token.replace('Bearer ', ''))\"",
          '- `src/auth.mjs:6` "export function allowed(user, action)"',
          '- `src/auth.mjs:7` "user.roles.includes(\'admin\')"',
        ]),
      ),
    },
    // Five citations, one of them invented (line 3 does not hold that text).
    bad: {
      'auth-flow': file(
        'research/auth-flow.md',
        REPORT([
          '- `src/auth.mjs:2` "const token = req.headers.authorization"',
          '- `src/auth.mjs:3` "if (!token) throw new AuthError()"',
          "- `src/auth.mjs:4` \"lookupSession(token.replace('Bearer ', ''))\"",
          '- `src/auth.mjs:6` "export function allowed(user, action)"',
          '- `src/auth.mjs:7` "user.roles.includes(\'admin\')"',
        ]),
      ),
    },
  },
  'critique-loop': {
    files: {
      'test/csv.test.mjs': nodeTest(
        "import { parseCsv } from '../src/csv.mjs';",
        "  assert.deepEqual(parseCsv('a,\"b,c\"\\r\\nd,\"e\"\"f\"\\n'), [['a', 'b,c'], ['d', 'e\"f']]);",
      ),
    },
    good: {
      'csv-parser': file(
        'src/csv.mjs',
        "export function parseCsv(text) {\n  const rows = [];\n  let row = [], f = '', q = false;\n  for (let i = 0; i < text.length; i++) {\n    const c = text[i];\n    if (q) { if (c === '\"' && text[i + 1] === '\"') { f += '\"'; i++; } else if (c === '\"') q = false; else f += c; }\n    else if (c === '\"') q = true;\n    else if (c === ',') { row.push(f); f = ''; }\n    else if (c === '\\n') { row.push(f); rows.push(row); row = []; f = ''; }\n    else if (c !== '\\r') f += c;\n  }\n  if (f || row.length) { row.push(f); rows.push(row); }\n  return rows;\n}",
      ),
    },
    bad: { 'csv-parser': file('src/csv.mjs', "export const parseCsv = (t) => t.split('\\n').map((l) => l.split(','));") },
  },
  phases: {
    files: { 'package.json': JSON.stringify({ name: 'fixture', private: true, type: 'module' }) },
    // One script for every file ({file} is replaced per implement task): each module exports one function.
    good: {
      'stats-helpers': `f={file}; mkdir -p src; case $(basename $f .mjs) in
zscore) printf '%s\\n' 'export function zscore(xs) { if (!xs.length) throw new RangeError("empty"); const m = xs.reduce((a, b) => a + b, 0) / xs.length; const sd = Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length); return xs.map((x) => (x - m) / sd); }' > $f ;;
winsorize) printf '%s\\n' 'export function winsorize(xs, lo = -Infinity, hi = Infinity) { if (!xs.length) throw new RangeError("empty"); return xs.map((x) => Math.min(hi, Math.max(lo, x))); }' > $f ;;
ewma) printf '%s\\n' 'export function ewma(xs, a = 0.5) { if (!xs.length) throw new RangeError("empty"); const out = [xs[0]]; for (let i = 1; i < xs.length; i++) out.push(a * xs[i] + (1 - a) * out[i - 1]); return out; }' > $f ;;
esac`,
    },
    // Two exports per file: the template's own check fails every implementer (and the test phase never runs).
    bad: { 'stats-helpers': "f={file}; mkdir -p src; printf '%s\\n' 'export const a = 1;' 'export const b = 2;' > $f" },
  },
  'best-of-n': {
    files: {
      'package.json': JSON.stringify({ name: 'fixture', private: true, scripts: { test: 'grep -n "quoted fields" src/parser.ts' } }),
      'src/parser.ts': 'export const parseLine = (l: string) => l.split(",");\n',
    },
    good: {
      'fix-parser': "printf '%s\\n' '// handles quoted fields' 'export const parseLine = (l: string) => l.match(/(\"[^\"]*\"|[^,]+)/g) ?? [];' > src/parser.ts",
    },
    bad: { 'fix-parser': "echo '// unchanged' >> src/parser.ts" },
  },
  'best-of-n-consensus': {
    files: {
      'package.json': JSON.stringify({ name: 'fixture', private: true, scripts: { test: 'grep -n "quoted fields" src/parser.mjs' } }),
      'src/parser.mjs': 'export const parseLine = (l) => l.split(",");\n',
      'test/parser-cases.txt': 'a,b\n"x,y",z\n\n"",q\n',
    },
    good: {
      'fix-parser':
        'printf \'%s\\n\' \'// handles quoted fields\' \'export const parseLine = (l) => (l.match(/("[^"]*"|[^,]+)/g) ?? []).map((f) => f.replace(/^"|"$/g, ""));\' > src/parser.mjs',
    },
    bad: { 'fix-parser': "echo '// unchanged' >> src/parser.mjs" },
  },
  ranked: {
    files: {
      'package.json': JSON.stringify({ name: 'fixture', private: true, scripts: { test: 'grep -n "quoted fields" src/parser.ts' } }),
      'src/parser.ts': 'export const parseLine = (l: string) => l.split(",");\n',
    },
    good: {
      'fix-parser': "printf '%s\\n' '// handles quoted fields' 'export const parseLine = (l: string) => l.match(/(\"[^\"]*\"|[^,]+)/g) ?? [];' > src/parser.ts",
    },
    bad: { 'fix-parser': "echo '// unchanged' >> src/parser.ts" },
  },
  generated: {
    files: { 'docs/roadmap.md': '# Roadmap\n\n1. words.txt\n' },
    good: {
      plan: `cat > tasks.json <<'EOF'\n[{"key": "words", "engine": "script", "spec": "echo alpha > words.txt", "check": "grep -x alpha words.txt", "expect_files": ["words.txt"], "task_type": "t", "verified": "words.txt says alpha"}]\nEOF`,
    },
    // A generated task whose check cannot fail: a lint error in tasks.json, so the planner FAILs.
    bad: {
      plan: `cat > tasks.json <<'EOF'\n[{"key": "words", "engine": "script", "spec": "echo alpha > words.txt", "check": "true", "expect_files": ["words.txt"], "task_type": "t", "verified": "words.txt says alpha"}]\nEOF`,
    },
  },
  validated: {
    files: { 'package.json': JSON.stringify({ name: 'fixture', private: true, scripts: { test: 'grep -q "export function sortWords" src/sort-words.ts' } }) },
    good: {
      'sort-words': file(
        'src/sort-words.ts',
        'export function sortWords(text: string): string[] {\n  return text.split(/\\s+/).filter(Boolean).sort((a, b) => a.localeCompare(b, undefined, { sensitivity: "base" }));\n}',
      ),
      // The validator: one judgement per worker folder it was given, then a verdict naming one.
      'sort-words:validator':
        'for d in "$VERDICT_INPUTS"/*/; do echo "$(basename "$d"): keep — exports sortWords"; done > validation.md; echo "verdict: A" >> validation.md',
    },
    bad: { 'sort-words': "echo '// nothing yet' > src/sort-words.ts", 'sort-words:validator': 'echo "verdict: A" > validation.md' },
  },
  council: {
    files: { 'src/api.ts': 'export const handler = () => "ok";\n', 'docs/architecture.md': '# Architecture\n' },
    good: {
      'cache-strategy': "printf '## Reasoning\\nsrc/api.ts:1 is cheap.\\n## Recommendation\\nnot at all\\n' > answer.md",
      'cache-strategy:review': 'for d in "$VERDICT_INPUTS"/answers/*/; do echo "$(basename "$d"): agrees"; done > review.md',
      'cache-strategy:chair': "printf '## Recommendation\\nnot at all\\n## Unresolved disagreements\\nnone\\n' > synthesis.md",
    },
    bad: {
      'cache-strategy': "printf '## Reasoning\\nunsure\\n' > answer.md",
      'cache-strategy:review': 'echo reviewed > review.md',
      'cache-strategy:chair': "printf '## Recommendation\\nnot at all\\n' > synthesis.md",
    },
  },
};

interface Task {
  key: string;
  engine?: string;
  spec: string;
  candidates?: { engine: string }[];
  review?: { engines: unknown[] };
  rank?: { engines: unknown[] };
  validate?: { engines?: unknown[]; engine?: string; spec?: string };
  council?: { members: unknown[]; review?: { spec?: string }; chair: { engine?: string; spec?: string } };
  critique?: { critics: unknown[] };
  phases?: { test: { engine: string }; review?: { engines: unknown[] } };
}

/**
 * A config with two reviewer engines that approve whatever they read (the script engine cannot review), a ranking
 * reviewer that scores every solution in its working directory 5 (so the candidates tie), and a critic that finds
 * nothing (the script engine cannot criticise either).
 */
function reviewerConfig(dir: string): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const engines: Record<string, unknown> = {};
  for (const name of ['rev-a', 'rev-b']) {
    fs.writeFileSync(path.join(bin, name), `#!/bin/bash\ntest -s "$VERDICT_REVIEW_MATERIAL" || exit 3\necho '{"verdict": "approve", "concerns": []}'\n`, {
      mode: 0o755,
    });
    engines[name] = { binary: name, argv: ['{spec}'], install: 'a test fixture', output: 'none', model: `${name}-1` };
  }
  fs.writeFileSync(
    path.join(bin, 'rank-a'),
    `#!/bin/bash\ns=''; for n in A B C D E F; do { [ -s "$n.diff" ] || [ -s "$n.txt" ]; } || continue; s="$s\${s:+, }\\"$n\\": 5"; done\n[ -n "$s" ] || exit 3\necho "{\\"scores\\": {$s}}"\n`,
    { mode: 0o755 },
  );
  engines['rank-a'] = { binary: 'rank-a', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'rank-a-1' };
  // The phases template's test writer (another engine than the implementers'): tests for its three helpers.
  const statsTest = `import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { zscore } from '../src/zscore.mjs';\nimport { winsorize } from '../src/winsorize.mjs';\nimport { ewma } from '../src/ewma.mjs';\ntest('helpers', () => {\n  assert.deepEqual(zscore([1, 3]), [-1, 1]);\n  assert.deepEqual(winsorize([1, 5, 9], 2, 8), [2, 5, 8]);\n  assert.deepEqual(ewma([2, 4]), [2, 3]);\n  for (const f of [zscore, winsorize, ewma]) assert.throws(() => f([]), RangeError);\n});\n`;
  fs.writeFileSync(path.join(bin, 'tester-a'), `#!/bin/bash\nmkdir -p test && cat > test/stats.test.mjs <<'EOF'\n${statsTest}EOF\n`, { mode: 0o755 });
  engines['tester-a'] = { binary: 'tester-a', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'tester-a-1' };
  fs.writeFileSync(path.join(bin, 'crit-a'), `#!/bin/bash\ntest -d "$VERDICT_TASK_DIR" || exit 3\necho '{"criticisms": []}'\n`, { mode: 0o755 });
  engines['crit-a'] = { binary: 'crit-a', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'crit-a-1' };
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ engines }));
  return { config, env: { PATH: `${bin}:${process.env.PATH}` } };
}

interface StateJson {
  tasks: { key: string; status: string; reason?: string }[];
}

/** Writes template `id` into a fixture repo with `verdict init`, swaps engines and specs, runs it; returns state and rows. */
async function runTemplate(id: string, which: 'good' | 'bad') {
  const fx = FIXTURES[id] as Fixture;
  const dir = tempDir();
  const repo = makeRepo(path.join(dir, 'repo'), fx.files);
  const init = await cli(['init', '--template', id, '--dir', repo]);
  assert.equal(init.exitCode, 0, init.all);
  const manifestFile = /^wrote (.*\.swarm\.jsonc?)$/m.exec(init.stdout)?.[1] as string;
  const m = parse(fs.readFileSync(manifestFile, 'utf8')) as { tasks: Task[]; review?: { engines: unknown[] } };
  const specs = fx[which];
  // `<key>:validator`, `<key>:review`, `<key>:chair`: the scripts of a workflow's own steps.
  assert.deepEqual(
    m.tasks.map((t) => t.key).sort(),
    Object.keys(specs)
      .filter((k) => !k.includes(':'))
      .sort(),
    `the fixture covers every task of ${id}`,
  );
  for (const t of m.tasks) {
    t.spec = specs[t.key] as string;
    if (t.validate) {
      if (t.validate.engines) t.validate.engines = t.validate.engines.map((_, i) => ({ engine: 'script', model: `w${i + 1}` }));
      t.validate.engine = 'script';
      t.validate.spec = specs[`${t.key}:validator`] as string;
    }
    if (t.council) {
      t.council.members = t.council.members.map((_, i) => ({ engine: 'script', model: `m${i + 1}` }));
      t.council.review = { ...t.council.review, spec: specs[`${t.key}:review`] as string };
      t.council.chair = { ...t.council.chair, engine: 'script', spec: specs[`${t.key}:chair`] as string };
    }
    if (t.engine) t.engine = 'script';
    if (t.candidates) t.candidates = t.candidates.map(() => ({ engine: 'script' }));
    if (t.review) t.review.engines = ['rev-a', 'rev-b'];
    if (t.rank) t.rank.engines = ['rank-a'];
    if (t.critique) t.critique.critics = ['crit-a'];
    if (t.phases) {
      t.phases.test.engine = 'tester-a';
      if (t.phases.review) t.phases.review.engines = ['rev-a', 'rev-b'];
    }
    if (m.review) m.review.engines = ['rev-a', 'rev-b'];
  }
  fs.writeFileSync(manifestFile, JSON.stringify(m, null, 2));
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', `template ${id}`);
  const { config, env } = reviewerConfig(dir);
  const home = path.join(dir, 'home');
  const r = await cli(['run', manifestFile, '--home', home, '--config', config, '--no-dashboard'], { env });
  const [run] = fs.readdirSync(path.join(home, 'runs'));
  const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', run as string, 'state.json'), 'utf8')) as StateJson;
  return { code: r.exitCode, out: r.all, state, rows: readRows(home), keys: Object.keys(specs).filter((k) => !k.includes(':')) };
}

describe('templates: each runs end to end with the script engine; its check passes real work and fails the rest', function () {
  this.timeout(300000);
  before(async function () {
    await requireSandbox(this);
  });

  it('covers every template', async () => {
    const list = await cli(['init', '--list']);
    assert.deepEqual(
      list.stdout
        .split('\n')
        .map((l) => l.split(' ')[0])
        .sort(),
      Object.keys(FIXTURES).sort(),
    );
  });

  it('no-model, unedited: init prints how to make the folder a repository; done as printed, it lints clean and every task PASSes', async () => {
    const dir = path.join(tempDir(), 'try it');
    const init = await cli(['init', '--template', 'no-model', '--dir', dir]);
    assert.equal(init.exitCode, 0, init.all);
    assert.match(init.stdout, /runs with no model \(script engine\)/);
    const lines = init.stdout.split('\n');
    const gitLine = lines[lines.findIndex((l) => /is not in a git repository/.test(l)) + 1] ?? '';
    assert.match(gitLine, /git init -q && git add -A && git commit/, init.stdout);
    // The user's identity, as a user has one: the printed line commits.
    const env = {
      ...process.env,
      GIT_AUTHOR_NAME: 'T',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 'T',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
    };
    execFileSync('bash', ['-c', gitLine], { env, stdio: 'ignore' });
    const manifestFile = path.join(dir, 'no-model.swarm.json');
    const lint = await cli(['lint', manifestFile]);
    assert.match(lint.stdout, /0 error\(s\), 0 warning\(s\)/, lint.all);
    const home = path.join(dir, '..', 'home');
    const r = await cli(['run', manifestFile, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stdout, /3\/3 passed/);
    assert.deepEqual(
      readRows(home)
        .map((x) => [x.task_key, x.verdict, x.check_exit_code])
        .sort(),
      [
        ['fix-fahrenheit', 'PASS', 0],
        ['wc-command', 'PASS', 0],
        ['word-count', 'PASS', 0],
      ],
    );
  });

  for (const id of Object.keys(FIXTURES)) {
    it(`${id}: the work done, every task PASSes`, async () => {
      const { code, out, state, rows } = await runTemplate(id, 'good');
      assert.equal(code, 0, out);
      // A first-pass candidate that lost is CANCELLED naming the winner; every other task PASSes.
      for (const t of state.tasks)
        assert.ok(
          t.status === 'PASS' || (t.key.includes('--c') && /^cancelled: candidate \d .* passed first$/.test(t.reason ?? '')),
          `${t.key}: ${t.status} ${t.reason}\n${out}`,
        );
      if (id === 'code-review')
        assert.deepEqual(
          rows.filter((r) => r.step === 'review').map((r) => r.verdict),
          ['PASS', 'PASS', 'PASS', 'PASS'],
          'both reviewers approved both tasks',
        );
      if (id === 'ranked')
        assert.deepEqual(
          [rows.filter((r) => r.step === 'rank').map((r) => r.verdict), state.tasks.find((t) => t.key === 'fix-parser')?.reason?.match(/tie between/)?.[0]],
          [['PASS'], 'tie between'],
          'the ranking reviewer scored both candidates (a tie)',
        );
      if (id === 'phases')
        assert.deepEqual(
          rows
            .map((r) => [r.task_key, r.step, r.worker_engine])
            .filter((r) => r[1] === 'work')
            .sort(),
          [
            ['stats-helpers', 'work', 'tester-a'],
            ['stats-helpers--impl-1', 'work', 'script'],
            ['stats-helpers--impl-2', 'work', 'script'],
            ['stats-helpers--impl-3', 'work', 'script'],
          ],
          'three implementers, then the tests by another engine',
        );
      if (id === 'critique-loop')
        assert.deepEqual(
          rows.map((r) => [r.step, r.worker_engine, r.verdict]),
          [
            ['work', 'script', 'PASS'],
            ['critique', 'crit-a', 'PASS'],
          ],
          'the critic found nothing: the loop ended after round 1',
        );
      if (id === 'best-of-n-consensus') {
        // Every candidate ran the same script: one group, every line of the cases file an input, none splitting them.
        const c = rows.find((r) => r.step === 'select')?.consensus as
          { decided: string; inputs: number; splitting: unknown[]; groups: { size: number }[] } | undefined;
        assert.deepEqual([c?.decided, c?.inputs, c?.splitting, c?.groups.map((g) => g.size)], ['largest', 3, [], [3]], JSON.stringify(c));
      }
      if (id === 'model-bakeoff')
        assert.equal(
          rows.filter((r) => r.task_type === 'bakeoff-parser' && r.step === 'work' && r.verdict === 'PASS').length,
          4,
          'every candidate ran to its end (select: all)',
        );
    });

    it(`${id}: the work not done, the template's check fails every task`, async () => {
      const { code, out, state, rows } = await runTemplate(id, 'bad');
      assert.equal(code, 1, out);
      const work = rows.filter((r) => r.step !== 'review' && r.step !== 'rank');
      assert.ok(work.length > 0);
      for (const r of work) {
        assert.equal(r.verdict, 'FAIL', `${r.task_key}: ${r.notes}\n${out}`);
        // The template's own check said no (the planner's check is its file's validation).
        if (id !== 'generated')
          assert.ok(typeof r.check_exit_code === 'number' && r.check_exit_code !== 0, `${r.task_key}: check exit ${r.check_exit_code}: ${r.notes}`);
      }
      const ended = state.tasks.filter((t) => !t.key.includes('--c'));
      for (const t of ended) assert.notEqual(t.status, 'PASS', `${t.key} must not pass`);
    });
  }
});

describe('verdict init', () => {
  it('writes the template and prints what it wrote and the next command', async () => {
    const dir = path.join(tempDir(), 'new');
    const r = await cli(['init', '--template', 'research', '--dir', dir]);
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(fs.readdirSync(dir, { recursive: true }).map(String).sort(), ['checks', 'checks/report.sh', 'research.swarm.json']);
    assert.match(r.stdout, new RegExp(`^wrote ${dir}/research\\.swarm\\.json$`, 'm'));
    assert.match(r.stdout, /verdict lint .*research\.swarm\.json && verdict run .*research\.swarm\.json/);
    const lint = await cli(['lint', path.join(dir, 'research.swarm.json')]);
    assert.equal(lint.exitCode, 0, lint.all);
  });

  it('refuses to overwrite: exit 1 naming the file, nothing written, the existing file intact', async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'checks'));
    fs.writeFileSync(path.join(dir, 'checks/no-match.sh'), 'echo mine');
    const r = await cli(['init', '--template', 'migration', '--dir', dir]);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stderr, /checks\/no-match\.sh already exists: not overwritten/);
    assert.equal(fs.readFileSync(path.join(dir, 'checks/no-match.sh'), 'utf8'), 'echo mine');
    assert.ok(!fs.existsSync(path.join(dir, 'migration.swarm.json')), 'nothing written');
  });

  it('a second init of the same template refuses its manifest; an unknown template is exit 2 listing the others', async () => {
    const dir = tempDir();
    assert.equal((await cli(['init', '--dir', dir])).exitCode, 0);
    assert.ok(fs.existsSync(path.join(dir, 'fan-out.swarm.json')), 'fan-out is the default');
    const again = await cli(['init', '--dir', dir]);
    assert.equal(again.exitCode, 1);
    const bad = await cli(['init', '--template', 'nope', '--dir', dir]);
    assert.equal(bad.exitCode, 2);
    assert.match(bad.all, /no template "nope" \(there are: best-of-n, [^)]*\bcode-review, [^)]*\bfan-out, /);
  });
});
