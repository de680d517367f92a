import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { applyFix, assertRange, col, findingsOf, manifest, task } from './lint-helpers';

/** The check rules: check-cannot-fail, check-silent, hard-coded-port (ranges inside the check string). */
describe('lint: check-cannot-fail', () => {
  const cases: [check: string, culprit: string][] = [
    ['true', '"true"'],
    [':', '":"'],
    ['exit 0', '"exit 0"'],
    ['echo ok', '"echo ok"'],
    ['echo building && printf "%s\\n" done', '"echo building && printf \\"%s\\\\n\\" done"'],
    ['npm test || true', '|| true'],
    ['npm test; true', '; true'],
    ['npm test; exit 0', '; exit 0'],
    ['npm test || exit 0', '|| exit 0'],
    ['npm test || echo "tests failed"', '|| echo \\"tests failed\\"'],
    ['pytest -q | tee test.log; :', '; :'],
    ['make check && make lint || :', '|| :'],
    ['if grep -q x f; then echo good; fi', 'if grep -q x f; then echo good; fi'],
    ['npm test\nif npm run lint; then echo clean; else echo dirty; fi', 'if npm run lint; then echo clean; else echo dirty; fi'],
    ['if test -s out.txt; then :; elif grep -q x f; then echo x; fi 2>/dev/null', 'if test -s out.txt; then :; elif grep -q x f; then echo x; fi 2>/dev/null'],
    ['bash run-tests.sh &', 'bash run-tests.sh &'],
    ['npm run build && npm test &', 'npm run build && npm test &'],
  ];
  for (const [check, culprit] of cases) {
    it(`trips on ${JSON.stringify(check)} and points at ${culprit}`, async () => {
      const t = task('a', { check });
      const text = manifest([t]);
      const found = await findingsOf('check-cannot-fail', text);
      assert.equal(found.length, 1);
      assert.equal(found[0]?.severity, 'error');
      assert.equal(found[0]?.taskKey, 'a');
      assertRange(text, found[0], 4, col(t, culprit, '"check":'), culprit);
    });
  }

  for (const check of [
    'npm test',
    'npm test 2>&1 | tail -n 20',
    'test -s report.md && echo exists || { echo missing; exit 1; }',
    'npm test || { echo "tests failed"; exit 1; }',
    'set -e; npm test; true',
    'set -euo pipefail\nnpm test | tee log\n:',
    'grep -q x f || false',
    'if npm test; then echo ok; else exit 1; fi',
    '! grep -rn TODO src',
    'if grep -q TODO src/a.ts; then echo "remove the TODO"; exit 1; fi',
    'if grep -q x f; then echo good; else echo "x missing from f"; exit 1; fi',
    'if [ -f a.txt ]; then npm test; fi',
    'set -e\nif grep -q x f; then echo good; fi\nnpm test',
    'npm start & sleep 2; npm test',
    'npm test 2>&1 | tail -n 20',
  ]) {
    it(`does not trip on ${JSON.stringify(check)}`, async () => {
      assert.deepEqual(await findingsOf('check-cannot-fail', manifest([task('a', { check })])), []);
    });
  }

  it('maps the range past JSON escapes: `|| true` after \\" and \\n is found exactly', async () => {
    const t = task('a', { check: 'echo "building"\nnpm test || true' });
    const text = manifest([t]);
    assert.ok(text.includes('"check":"echo \\"building\\"\\nnpm test || true"'));
    const [f] = await findingsOf('check-cannot-fail', text);
    assertRange(text, f, 4, col(t, '|| true'), '|| true');
  });

  it('names the if that cannot fail and says how to make it fail', async () => {
    const [f] = await findingsOf('check-cannot-fail', manifest([task('a', { check: 'if grep -q x f; then echo good; fi' })]));
    assert.match(
      f?.message ?? '',
      /`if grep -q x f; then \.\.\. fi` exits 0 whichever way it goes \(its branch cannot fail, and with no `else` a false condition exits 0 too\)/,
    );
    assert.match(f?.message ?? '', /`exit 1`/);
  });

  it('a trailing & says the status is never seen; the quick fix drops it and the rule no longer trips', async () => {
    const text = manifest([task('a', { check: 'bash run-tests.sh  &' })]);
    const [f] = await findingsOf('check-cannot-fail', text);
    assert.match(f?.message ?? '', /`bash run-tests.sh  &` runs in the background: bash does not wait for it/);
    const after = applyFix(text, f);
    assert.equal(after, manifest([task('a', { check: 'bash run-tests.sh' })]));
    assert.deepEqual(await findingsOf('check-cannot-fail', after), []);
  });

  it('says why and how in the message', async () => {
    const [f] = await findingsOf('check-cannot-fail', manifest([task('a', { check: 'npm test || true' })]));
    assert.match(f?.message ?? '', /`\|\| true` makes the check exit 0 .* Remove it/);
  });
});

describe('lint: check-silent', () => {
  const cases: [check: string, command: string][] = [
    ['test -f out.txt', 'test -f out.txt'],
    ['[ -f out.txt ]', '[ -f out.txt ]'],
    ['[[ -s report.md ]]', '[[ -s report.md ]]'],
    ['npm run build && test -f dist/app.js', 'test -f dist/app.js'],
    ['grep -q "export function parseCsv" csv.ts', 'grep -q \\"export function parseCsv\\" csv.ts'],
    ['npm test | grep -qE "passing|ok"', 'grep -qE \\"passing|ok\\"'],
    ['cmp -s expected.txt out.txt', 'cmp -s expected.txt out.txt'],
    ['diff -q expected.txt out.txt', 'diff -q expected.txt out.txt'],
    ['npm run format && git diff --quiet', 'git diff --quiet'],
    ['set -e\ntest -f a.txt\nnpm test', 'test -f a.txt'],
    ['test -f a.txt || exit 1', 'test -f a.txt'],
    ['npm test && { test -f a.txt && grep -q x a.txt; }', 'grep -q x a.txt'],
  ];
  for (const [check, command] of cases) {
    it(`trips on ${JSON.stringify(check)} at ${command}`, async () => {
      const t = task('a', { check });
      const text = manifest([t]);
      const found = await findingsOf('check-silent', text);
      assert.ok(found.length >= 1);
      const f = found.find((x) => text.slice(x.range?.offset, (x.range?.offset ?? 0) + (x.range?.length ?? 0)) === command);
      assert.equal(f?.severity, 'warning');
      assertRange(text, f, 4, col(t, command), command);
    });
  }

  for (const check of [
    'test -f out.txt || { echo "out.txt is missing"; exit 1; }',
    "test -s report.md && echo 'report.md exists' || { echo 'report.md is missing'; exit 1; }",
    'grep -q x f || echo "x missing from f" >&2',
    'test -f a.txt; npm test',
    'if grep -q TODO src/a.ts; then echo "remove the TODO"; exit 1; fi',
    '! grep -q TODO src/a.ts',
    'grep -n "export function" csv.ts',
    'diff -u expected.txt out.txt',
    'git diff --exit-code --stat',
    'test "$(./fizzbuzz.sh | tail -n 1)" = FizzBuzz',
  ]) {
    it(`does not trip on ${JSON.stringify(check)}`, async () => {
      assert.deepEqual(await findingsOf('check-silent', manifest([task('a', { check })])), []);
    });
  }
});

describe('lint: check-silent quick fixes', () => {
  const fixes: [check: string, fixed: string][] = [
    ['diff -q expected.txt out.txt', 'diff expected.txt out.txt'],
    ['cmp -s expected.txt out.txt', 'cmp expected.txt out.txt'],
    ['npm run format && git diff --quiet', 'npm run format && git diff --exit-code --stat'],
    ['git diff --exit-code --quiet src', 'git diff --exit-code --stat src'],
    ['grep -q "export function parseCsv" csv.ts', `grep "export function parseCsv" csv.ts || { echo 'missing export function parseCsv in csv.ts'; exit 1; }`],
    ['grep -qF TODO notes.md && npm test', `grep -F TODO notes.md || { echo 'missing TODO in notes.md'; exit 1; } && npm test`],
    ['npm test | grep -q passing', `npm test | grep passing || { echo 'no line matches passing'; exit 1; }`],
    ['npm run build && test -f dist/app.js', `npm run build && { test -f dist/app.js || { echo 'dist/app.js is missing'; exit 1; }; }`],
    ['[ -s report.md ]', `[ -s report.md ] || { echo 'report.md is missing or empty'; exit 1; }`],
  ];
  for (const [check, fixed] of fixes) {
    it(`rewrites ${JSON.stringify(check)} so it says why it failed, and the rule no longer trips`, async () => {
      const text = manifest([task('a', { check })]);
      const [f] = await findingsOf('check-silent', text);
      const after = applyFix(text, f);
      assert.equal(after, manifest([task('a', { check: fixed })]));
      assert.deepEqual(await findingsOf('check-silent', after), []);
      assert.deepEqual(await findingsOf('check-cannot-fail', after), []);
    });
  }

  it('keeps JSON escapes valid: a fix of a check holding \\" and \\n still parses to the intended command', async () => {
    const text = manifest([task('a', { check: 'echo "checking"\ngrep -q "a b" f.txt' })]);
    const [f] = await findingsOf('check-silent', text);
    const after = applyFix(text, f);
    const parsed = JSON.parse(after) as { tasks: { check: string }[] };
    assert.equal(parsed.tasks[0]?.check, `echo "checking"\ngrep "a b" f.txt || { echo 'missing a b in f.txt'; exit 1; }`);
  });
});

describe('lint: hard-coded-port', () => {
  const cases: [check: string, port: string][] = [
    ['curl -sf http://localhost:3000/health', '3000'],
    ['curl -sf http://127.0.0.1:8080', '8080'],
    ['npx vite preview --port 5173 & sleep 2; curl -sf http://app.test:5173/', '5173'],
    ['PORT=4000 npm start & sleep 3; npm run e2e', '4000'],
    ['wget -qO- http://[::1]:9000/status', '9000'],
    ['curl -s http://web:8000/api/ping', '8000'],
  ];
  for (const [check, port] of cases) {
    it(`trips on ${JSON.stringify(check)} at ${port}`, async () => {
      const t = task('a', { check });
      const text = manifest([t]);
      const found = await findingsOf('hard-coded-port', text);
      assert.ok(found.length >= 1);
      assert.equal(found[0]?.severity, 'warning');
      assertRange(text, found[0], 4, col(t, port), port);
    });
  }

  it('reports each literal once (localhost:3000/ matches two patterns)', async () => {
    const found = await findingsOf('hard-coded-port', manifest([task('a', { check: 'npm start -- --port 3000 & curl -sf http://localhost:3000/' })]));
    assert.equal(found.length, 2);
  });

  for (const check of ['curl -sf http://localhost:$PORT/health', 'curl -sf "http://127.0.0.1:${PORT:-3000}/"', 'npm test -- --timeout 3000', 'sleep 3000']) {
    it(`does not trip on ${JSON.stringify(check)}`, async () => {
      assert.deepEqual(await findingsOf('hard-coded-port', manifest([task('a', { check })])), []);
    });
  }

  it('quick fix: the number becomes $PORT, and the rule no longer trips', async () => {
    const text = manifest([task('a', { check: 'curl -sf "http://localhost:3000/health"' })]);
    const [f] = await findingsOf('hard-coded-port', text);
    assert.equal(f?.fix?.newText, '$PORT');
    const after = applyFix(text, f);
    assert.equal(after, manifest([task('a', { check: 'curl -sf "http://localhost:$PORT/health"' })]));
    assert.deepEqual(await findingsOf('hard-coded-port', after), []);
  });

  it('quick fix inside single quotes closes them around "$PORT" so it expands', async () => {
    const text = manifest([task('a', { check: "curl -sf 'http://localhost:3000/health'" })]);
    const after = applyFix(text, (await findingsOf('hard-coded-port', text))[0]);
    assert.equal(after, manifest([task('a', { check: `curl -sf 'http://localhost:'"$PORT"'/health'` })]));
  });
});

describe('lint: check-pipefail', () => {
  const differs: [check: string, pipeline: string][] = [
    ['bash run-tests.sh | tee log', 'bash run-tests.sh | tee log'],
    ['npm test 2>&1 | tail -n 20', 'npm test 2>&1 | tail -n 20'],
    ['npm run build && npm test | grep -v noise', 'npm test | grep -v noise'],
    ['set -e\npytest | tee test.log\necho done', 'pytest | tee test.log'],
    ['npm run lint; { npm test | tee log; }', 'npm test | tee log'],
    ['if [ -f package.json ]; then npm test | tee log; else exit 1; fi', 'npm test | tee log'],
    ['npm test | tee log | tail -3', 'npm test | tee log | tail -3'],
    ['grep -c TODO src/a.ts | wc -l', 'grep -c TODO src/a.ts | wc -l'],
    ['npm test | tee log || { echo "tests failed"; exit 1; }', 'npm test | tee log'],
  ];
  for (const [check, pipeline] of differs) {
    it(`notes that ${JSON.stringify(check)} behaves differently from Ringer, at ${JSON.stringify(pipeline)}`, async () => {
      const t = task('a', { check });
      const text = manifest([t]);
      const found = await findingsOf('check-pipefail', text);
      assert.equal(found.length, 1);
      assert.equal(found[0]?.severity, 'info');
      assert.equal(found[0]?.taskKey, 'a');
      const raw = JSON.stringify(pipeline).slice(1, -1);
      assertRange(text, found[0], 4, col(t, raw, '"check":'), raw);
    });
  }

  it('names the pipeline, the command that now decides, and the way back', async () => {
    const [f] = await findingsOf('check-pipefail', manifest([task('a', { check: 'bash run-tests.sh | tee log' })]));
    assert.equal(
      f?.message,
      'Verdict runs checks with pipefail: `bash run-tests.sh | tee log` now fails when `bash run-tests.sh` fails; under Ringer (plain `bash -c`) only `tee log` decided, so it passed. Usually what you want; to keep the old behaviour start the check with `set +o pipefail;`.',
    );
  });

  for (const check of [
    'npm test',
    'set -o pipefail; npm test | tee log',
    'set -euo pipefail\nnpm test | tee log',
    'set +o pipefail; npm test | head -5',
    'echo "$PATH" | grep -q node',
    'printf "%s\\n" a b | head -1',
    'npm test | tee log; npm run lint',
    'test "$(npm test | tail -n 1)" = ok',
    'npm test | tee log &\nnpm run lint',
    'if npm test | tee log; then echo ok; fi\nnpm run lint',
  ]) {
    it(`says nothing about ${JSON.stringify(check)}`, async () => {
      assert.deepEqual(await findingsOf('check-pipefail', manifest([task('a', { check })])), []);
    });
  }

  const sigpipe: [check: string, reader: string, fixed: string | null][] = [
    ['npm test | head -5', 'head -5', 'sed -n 1,5p'],
    ['npm test 2>&1 | head -n 3', 'head -n 3', 'sed -n 1,3p'],
    ['npm test | head', 'head', 'sed -n 1,10p'],
    ['npm test | head --lines=7 | tee log', 'head --lines=7', 'sed -n 1,7p'],
    ['npm test | head -c 100', 'head -c 100', null],
    ['npm test 2>&1 | grep -q passing', 'grep -q passing', null],
    ['npm test | grep -m1 "0 failing"', 'grep -m1 \\"0 failing\\"', null],
    ['yes | sed 5q', 'sed 5q', null],
    ["cat build.log | awk '/ERROR/ { exit 1 }'", "awk '/ERROR/ { exit 1 }'", null],
    ['set -o pipefail; npm test | head -5', 'head -5', 'sed -n 1,5p'],
  ];
  for (const [check, reader, fixed] of sigpipe) {
    it(`warns that ${JSON.stringify(check)} can fail at random (SIGPIPE), at ${reader}`, async () => {
      const t = task('a', { check });
      const text = manifest([t]);
      const found = await findingsOf('check-pipefail', text);
      assert.equal(found.length, 1);
      assert.equal(found[0]?.severity, 'warning');
      assertRange(text, found[0], 4, col(t, reader, '"check":'), reader);
      assert.match(found[0]?.message ?? '', /killed by SIGPIPE \(status 141\).* fails at random/);
      if (fixed === null) {
        assert.equal(found[0]?.fix, undefined);
        return;
      }
      assert.match(found[0]?.message ?? '', new RegExp(`Use \`${fixed}\` instead`));
      const after = applyFix(text, found[0]);
      assert.equal(after, manifest([task('a', { check: check.replace(reader, fixed) })]));
      assert.ok(!(await findingsOf('check-pipefail', after)).some((f) => f.severity === 'warning'));
      assert.deepEqual(await findingsOf('check-cannot-fail', after), []);
    });
  }

  it('a manifest naming the Verdict schema was written for Verdict: no Ringer note, the SIGPIPE warning stays', async () => {
    const run = { $schema: '../../schemas/manifest.schema.json', run_name: 't' };
    assert.deepEqual(await findingsOf('check-pipefail', manifest([task('a', { check: 'bash run-tests.sh | tee log' })], run)), []);
    const found = await findingsOf('check-pipefail', manifest([task('a', { check: 'npm test | head -5' })], run));
    assert.deepEqual(
      found.map((f) => f.severity),
      ['warning'],
    );
  });

  it('head -n -5 reads all its input: no SIGPIPE warning, only the Ringer note', async () => {
    const found = await findingsOf('check-pipefail', manifest([task('a', { check: 'npm test | head -n -5' })]));
    assert.deepEqual(
      found.map((f) => f.severity),
      ['info'],
    );
  });

  it('the sed replacement really reads everything: the producer is not killed and the check passes', () => {
    const run = (check: string) => {
      try {
        execFileSync('bash', ['-o', 'pipefail', '-c', check], { stdio: 'pipe' });
        return 0;
      } catch (e) {
        return (e as { status: number }).status;
      }
    };
    assert.equal(run('seq 1 200000 | head -5'), 141);
    assert.equal(run('seq 1 200000 | sed -n 1,5p'), 0);
  });
});
