/**
 * Lint of a generated 1,000-task manifest with varied checks: the speed-ups (shell analysis cached
 * per distinct check and word, quote removal without shell-quote for plainly quoted words) must not change a single
 * finding. EXPECTED was computed once with the linter as it was before them (commit 2434e68); a rule change that
 * alters findings on purpose updates it (the failure prints the new digest and counts).
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { parse as shellParse } from 'shell-quote';
import { parseShell, unquote, type ShellList } from '../../extension/core/manifest/rules/shell';
import { ctx } from './lint-helpers';
import { lintManifestText } from '../../extension/core/run/manifest';

/** Check templates covering what the shell rules read: quotes, escapes, groups, ifs, pipes, set flags, globs, comments. */
const CHECKS: ((i: number) => string)[] = [
  (i) => `test "$(cat out/${i}.txt)" = ${i}`,
  (i) => `test -s out/${i}.txt`,
  (i) => `test -f 'out/${i} file.txt'`,
  (i) => `[ -f "out/${i}.txt" ]`,
  (i) => `[[ -d out/${i} ]]`,
  (i) => `grep -q "needle ${i}" src/${i}.ts`,
  (i) => `grep -qE 'a|b' f${i}.txt`,
  (i) => `grep -e "x${i}" -q f.txt || { echo 'missing x'; exit 1; }`,
  (i) => `cmp -s a${i} b${i}`,
  (i) => `diff -q "a ${i}" b`,
  (i) => `git diff --quiet -- src/${i}`,
  (i) => `git -C repo${i} diff --quiet --exit-code`,
  () => `npm test || true`,
  (i) => `npm test -- --grep t${i}; echo done`,
  (i) => `bash run-tests.sh ${i} &`,
  (i) => `if grep -q x${i} f; then echo good; fi`,
  (i) => `if test -s o${i}; then exit 0; else echo bad; exit 1; fi`,
  (i) => `npm test | head -${(i % 9) + 1}`,
  (i) => `bash run-tests.sh | tee log${i}`,
  (i) => `set -e; test -s a${i}; grep -q b c`,
  (i) => `set -euo pipefail\nnode check.js ${i} | grep -q ok`,
  (i) => `set +o pipefail; make t${i} | tail -1`,
  (i) => `echo "building ${i}"\nnpm test || true`,
  () => `true`,
  () => `:`,
  (i) => `exit ${i % 2}`,
  (i) => `echo "\${HOME}/x${i}" && test -s "$HOME/out${i}"`,
  (i) => `test -s out/*.txt && ls out/${i}?`,
  (i) => `test -s a${i} # a comment with 'quotes'`,
  (i) => `test -s $'a\\tb${i}' && printf '%s\\n' x`,
  (i) => `test -s a\\ b${i} && test -e \`echo f${i}\``,
  (i) => `{ grep -q x f${i}; } && ( cmp -s a b )`,
  (i) => `! grep -q bad out${i}.log`,
  (i) => `python3 -c "import sys; sys.exit(${i} % 2)" | awk '{exit}'`,
  (i) => `for f in a b; do test -s $f; done; test -s z${i}`,
  () => `case x in x) true;; esac`,
  (i) => `curl -sf "http://localhost:${3000 + (i % 5)}/health"`,
  (i) => `npm start -- --port 300${i % 10} & curl -sf http://localhost:300${i % 10}/`,
  (i) => `test -s "é${i}\\"q\\"" && sed -n 1,5p f | sed 3q`,
  (i) => `grep -c ok "$(ls out/${i}*)" > /dev/null 2>&1 || exit 1`,
];

/** 1,000 tasks; a third share a check (as real manifests do), the rest differ per task; fields vary so other rules fire. */
function bigManifest(): string {
  const tasks = Array.from({ length: 1000 }, (_, i) => {
    const template = CHECKS[i % CHECKS.length] as (i: number) => string;
    const t: Record<string, unknown> = {
      key: `task-${i}`,
      spec: i % 7 === 0 ? `Fix it ${i}.` : `Write out/${i}.txt containing the number ${i}, nothing else; keep the rest of the repository as it is.`,
      check: template(i % 3 === 0 ? 0 : i),
      engine: i % 5 === 0 ? 'codex' : 'script',
    };
    if (i % 4 !== 1) t.expect_files = [`out/${i}.txt`];
    if (i % 6 !== 2) t.verified = `out/${i}.txt holds ${i}`;
    if (i % 11 === 3) t.task_type = 'writer';
    if (i % 13 === 4 && i > 0) t.after = [`task-${i - 1}`];
    return t;
  });
  return JSON.stringify({ run_name: 'lint-bulk', workdir: 'work', max_parallel: 8, tasks }, null, 2);
}

const FILE = '/work/lint-bulk/big.swarm.json';
const EXPECTED = {
  sha256: '634fcff3163a36ba476f12a9e7d81557222112787edea969fb957765b1146c55',
  counts: {
    'check-cannot-fail/error': 183,
    'check-pipefail/info': 25,
    'check-pipefail/warning': 100,
    'check-silent/warning': 575,
    'hard-coded-port/warning': 75,
    'missing-expect-files/info': 250,
    'missing-task-type/info': 182,
    'missing-verified/info': 167,
    'underspecified-spec/warning': 29,
  } as Record<string, number>,
};

describe('lint of a 1,000-task manifest: findings unchanged by the speed-ups', () => {
  it('gives byte-identical findings to the linter before them (digest and per-rule counts)', async () => {
    const findings = await lintManifestText(bigManifest(), FILE, ctx);
    const json = JSON.stringify(findings);
    const counts: Record<string, number> = {};
    for (const f of findings) counts[`${f.rule}/${f.severity}`] = (counts[`${f.rule}/${f.severity}`] ?? 0) + 1;
    const sha256 = crypto.createHash('sha256').update(json).digest('hex');
    assert.ok(findings.length > 1000, `the fixture should make many findings, got ${findings.length}`);
    assert.deepEqual({ sha256, counts }, EXPECTED);
  });

  it('lints the same text twice to the same findings (caches do not leak between tasks or runs)', async () => {
    const text = bigManifest();
    assert.deepEqual(await lintManifestText(text, FILE, ctx), await lintManifestText(text, FILE, ctx));
  });

  it('removes quotes from every word of every check as shell-quote does', () => {
    const words = new Set<string>();
    const collect = (lists: ShellList[]): void => {
      for (const l of lists)
        for (const p of l.pipelines)
          for (const c of p.commands) {
            for (const w of c.words) words.add(w.raw);
            collect(c.inner);
          }
    };
    for (let i = 0; i < 200; i++) for (const check of CHECKS) collect(parseShell(check(i)));
    for (const extra of [
      '${}',
      '"${}"',
      '""',
      "''",
      '"a b"',
      "'a\"b'",
      '"$X"',
      '"${X}"',
      '"a\\"b"',
      '"*"',
      '"$(a "b")"',
      '"a"b',
      '\'a\'"b"',
      '"$"',
      '"#x"',
      '"a$"',
      '"\n"',
    ])
      words.add(extra);
    let checked = 0;
    for (const w of words) {
      let reference: string;
      try {
        const parts = shellParse(w, (name) => `$${name}`);
        reference = parts.every((p) => typeof p === 'string') ? parts.join(' ') : w;
      } catch {
        assert.equal(unquote(w), w, `${w}: a word shell-quote refuses comes back as written`);
        continue;
      }
      assert.equal(unquote(w), reference, w);
      assert.equal(unquote(w), reference, `${w} (second call)`);
      checked++;
    }
    assert.ok(checked > 500, `compared ${checked} words`);
  });
  it('a check holding a word shell-quote refuses (`${}`) is linted, not an internal error', async () => {
    const text = JSON.stringify({ tasks: [{ key: 'a', spec: 'x', check: 'test -s "${}" && grep -q ${} out.txt' }] });
    const findings = await lintManifestText(text, FILE, ctx);
    assert.ok(Array.isArray(findings));
    assert.ok(!findings.some((f) => /internal|Bad substitution/.test(f.message)), JSON.stringify(findings));
  });
});
