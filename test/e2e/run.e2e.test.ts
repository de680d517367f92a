import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import type { RunState } from '../../extension/core/live/state';

describe('verdict run, worktree mode, end to end', function () {
  this.timeout(120000);
  let dir: string;
  let home: string;
  let repo: string;
  let result: Awaited<ReturnType<typeof cli>>;

  before(async () => {
    dir = tempDir();
    home = path.join(dir, 'home');
    repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# repo\n', 'src/base.txt': 'base\n' });
    const manifest = writeManifest(repo, {
      run_name: 'e2e',
      worktrees: true,
      max_parallel: 3,
      tasks: [
        scriptTask('pass', 'echo "hello from $VERDICT_TASK_KEY" > out.txt; echo worker-said-done', 'grep -x "hello from pass" out.txt', {
          expect_files: ['out.txt'],
        }),
        scriptTask(
          'retry-pass',
          'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo wrong > answer.txt; else grep -q "WANTED 42" "$VERDICT_FAILURE_FILE" && echo 42 > answer.txt; fi',
          'test "$(cat answer.txt)" = 42 || { echo "WANTED 42, got $(cat answer.txt)"; exit 1; }',
          { expect_files: ['answer.txt'] },
        ),
        scriptTask('fail', 'echo "All done, trust me"', 'echo "RAW-CHECK-OUTPUT: banana.txt not found"; exit 7', { expect_files: ['banana.txt'] }),
        scriptTask('timeout', 'sleep 300', 'true', { timeout_s: 1, max_attempts: 1 }),
        scriptTask('empty-file', ': > empty.txt', 'true', { expect_files: ['empty.txt'] }),
      ],
    });
    // --force: `timeout` and `empty-file` have the check `true` (a lint error) on purpose: one times out before it, the
    // other FAILs on its empty expected file though the check passes.
    result = await cli(['run', manifest, '--home', home, '--identity', 'e2e-tester', '--force']);
  });

  it('exits 1 because not every task passed, and prints a verdict table', () => {
    assert.equal(result.exitCode, 1, result.all);
    assert.match(result.all ?? '', /task\s+verdict\s+attempts\s+duration\s+tokens/);
    assert.match(result.all ?? '', /^pass\s+PASS\s+1\s/m);
    assert.match(result.all ?? '', /^retry-pass\s+PASS\s+2\s/m);
    assert.match(result.all ?? '', /^fail\s+FAIL\s+2\s/m);
    assert.match(result.all ?? '', /^timeout\s+TIMEOUT\s+1\s/m);
    assert.match(result.all ?? '', /^empty-file\s+FAIL\s+2\s/m);
    assert.match(result.all ?? '', /2\/5 passed/);
  });

  it('writes one eval row per attempt with the facts of each', () => {
    const rows = readRows(home);
    const by = (key: string) => rows.filter((r) => r.task_key === key).sort((a, b) => Number(a.attempt) - Number(b.attempt));
    assert.equal(rows.length, 8);
    assert.deepEqual(
      by('pass').map((r) => r.verdict),
      ['PASS'],
    );
    assert.deepEqual(
      by('retry-pass').map((r) => [r.verdict, r.retry]),
      [
        ['FAIL', false],
        ['PASS', true],
      ],
    );
    assert.deepEqual(
      by('fail').map((r) => r.verdict),
      ['FAIL', 'FAIL'],
    );
    assert.deepEqual(
      by('timeout').map((r) => r.verdict),
      ['TIMEOUT'],
    );
    assert.deepEqual(
      by('empty-file').map((r) => r.verdict),
      ['FAIL', 'FAIL'],
    );
    const fail = by('fail')[0] as Record<string, unknown>;
    assert.equal(fail.check_output, 'RAW-CHECK-OUTPUT: banana.txt not found\n');
    assert.equal(fail.check_exit_code, 7);
    assert.match(String(fail.notes), /the check exited 7/);
    assert.match(String(by('empty-file')[0]?.notes), /expected files missing or not real files in the task dir: empty\.txt \(empty\)/);
    for (const r of rows) {
      assert.equal(r.identity, 'e2e-tester');
      assert.equal(r.worker_engine, 'script');
      assert.equal(r.harness, 'script');
      assert.equal(r.run_name, 'e2e');
      assert.equal(r.tokens_in, null, 'the script engine reports no usage: null, never 0');
      assert.equal(r.worker_tokens, null);
      assert.equal(r.cost_microusd, null);
      for (const k of ['prompt_path', 'worker_log', 'check_log', 'receipt_path']) {
        assert.ok(!String(r[k]).startsWith(path.join(home, 'worktrees')), `${k} must lie outside the task dir`);
      }
      assert.ok(fs.existsSync(String(r.worker_log)));
      assert.ok(fs.existsSync(String(r.receipt_path)));
    }
    const receipt = JSON.parse(fs.readFileSync(String(by('timeout')[0]?.receipt_path), 'utf8')) as { worker: { timedOut: boolean; pid: number } };
    assert.equal(receipt.worker.timedOut, true);
    assert.ok(receipt.worker.pid > 0);
  });

  it('injects the failed check output into the retry (the script engine reads VERDICT_FAILURE_FILE)', () => {
    const row = readRows(home).find((r) => r.task_key === 'retry-pass' && r.attempt === 2) as Record<string, unknown>;
    const failure = fs.readFileSync(path.join(path.dirname(String(row.prompt_path)), 'failure.md'), 'utf8');
    assert.match(failure, /WANTED 42, got wrong/);
    assert.match(failure, /Attempt 1 was judged FAIL/);
  });

  it('commits passed work onto the task branches, made by the orchestrator; failed tasks leave their branch at base', () => {
    const rows = readRows(home);
    const runId = String(rows[0]?.run_id);
    const base = git(repo, 'rev-parse', 'main');
    assert.equal(git(repo, 'show', `verdict/${runId}/pass:out.txt`), 'hello from pass');
    assert.equal(git(repo, 'show', `verdict/${runId}/retry-pass:answer.txt`), '42');
    assert.equal(git(repo, 'rev-parse', `verdict/${runId}/pass~1`), base);
    assert.equal(git(repo, 'rev-parse', `verdict/${runId}/fail`), base);
    const passRow = rows.find((r) => r.task_key === 'pass');
    assert.equal(passRow?.commit, git(repo, 'rev-parse', `verdict/${runId}/pass`));
    assert.match(git(repo, 'log', '-1', '--format=%s', `verdict/${runId}/pass`), /^verdict: pass \(run /);
    assert.equal(git(repo, 'status', '--porcelain'), '?? test.swarm.json', 'the main working tree is untouched (only the manifest the test wrote)');
  });

  it('leaves a finished state.json with every task final and a frozen manifest', () => {
    const runId = String(readRows(home)[0]?.run_id);
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;
    assert.equal(state.status, 'finished');
    assert.equal(state.identity, 'e2e-tester');
    assert.equal(state.pid > 0, true);
    assert.deepEqual(Object.fromEntries(state.tasks.map((t) => [t.key, t.status])), {
      pass: 'PASS',
      'retry-pass': 'PASS',
      fail: 'FAIL',
      timeout: 'TIMEOUT',
      'empty-file': 'FAIL',
    });
    const ports = state.tasks.map((t) => t.port);
    assert.equal(new Set(ports).size, 5, 'each task has its own PORT');
    const frozen = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'manifest.json'), 'utf8')) as { manifest: { run_name: string } };
    assert.equal(frozen.manifest.run_name, 'e2e');
  });
});

describe('verdict run, plain mode and max_parallel', function () {
  this.timeout(60000);
  it('runs each task in <workdir>/<key> with exactly max_parallel at once', async () => {
    const dir = tempDir();
    // Each worker records when it started and ended (ns) in its own task dir; the overlap must reach 2, never 3.
    const spec = 'date +%s%N > started; sleep 0.4; date +%s%N > ended; pwd > where.txt';
    const tasks = ['a', 'b', 'c', 'd', 'e'].map((k) => scriptTask(k, spec, 'test -s where.txt', { expect_files: ['where.txt'] }));
    const manifest = writeManifest(dir, { workdir: 'work', max_parallel: 2, tasks });
    const r = await cli(['run', manifest, '--home', path.join(dir, 'home')]);
    assert.equal(r.exitCode, 0, r.all);
    const events: [bigint, number][] = [];
    for (const k of ['a', 'b', 'c', 'd', 'e']) {
      events.push([BigInt(fs.readFileSync(path.join(dir, 'work', k, 'started'), 'utf8').trim()), 1]);
      events.push([BigInt(fs.readFileSync(path.join(dir, 'work', k, 'ended'), 'utf8').trim()), -1]);
    }
    events.sort((x, y) => (x[0] === y[0] ? x[1] - y[1] : x[0] < y[0] ? -1 : 1));
    let running = 0;
    let peak = 0;
    for (const [, delta] of events) {
      running += delta;
      peak = Math.max(peak, running);
    }
    assert.equal(peak, 2);
    assert.equal(fs.readFileSync(path.join(dir, 'work', 'c', 'where.txt'), 'utf8').trim(), path.join(dir, 'work', 'c'));
  });

  it('a rerun cannot pass on files an earlier run left in <workdir>/<key>: they are moved aside, not deleted', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const first = writeManifest(
      dir,
      { workdir: 'work', tasks: [scriptTask('t', 'echo hello > out.txt', 'grep -x hello out.txt', { expect_files: ['out.txt'] })] },
      'first.swarm.json',
    );
    assert.equal((await cli(['run', first, '--home', home])).exitCode, 0);
    const lazy = writeManifest(
      dir,
      { workdir: 'work', tasks: [scriptTask('t', 'echo I did nothing', 'grep -x hello out.txt', { expect_files: ['out.txt'], max_attempts: 1 })] },
      'second.swarm.json',
    );
    const r = await cli(['run', lazy, '--home', home]);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stdout, /t {2}the task dir held files from an earlier run; they were moved to .*\.verdict-previous/);
    assert.match(r.stdout, /^t\s+FAIL\s+1\s/m);
    const previous = path.join(dir, 'work', '.verdict-previous');
    const [runId] = fs.readdirSync(previous);
    assert.equal(fs.readFileSync(path.join(previous, String(runId), 't', 'out.txt'), 'utf8'), 'hello\n', 'the earlier work is kept');
  });
});
