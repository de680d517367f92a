import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

interface TaskJson {
  key: string;
  status: string;
  reason?: string;
  commit: string | null;
  winner?: string;
  consensus?: { groups: string[][]; inputs: number; splitting: number; decided: string };
  attempts: { verdict: string | null }[];
}
interface StateJson {
  runId: string;
  tasks: TaskJson[];
}

function state(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs')).sort();
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}

const byKey = (s: StateJson, key: string): TaskJson => {
  const t = s.tasks.find((x) => x.key === key);
  assert.ok(t, `no task ${key} in ${JSON.stringify(s.tasks.map((x) => x.key))}`);
  return t;
};

interface ConsensusRow {
  inputs: number;
  given: number;
  groups: { members: { key: string; candidate: number; engine: string; model: string | null }[]; size: number }[];
  splitting: { input: number; text: string }[];
  decided: string;
  tie: string | null;
  why: string;
}

const selectRowOf = (home: string, key: string) => {
  const rows = readRows(home).filter((r) => r.task_key === key && r.step === 'select');
  assert.equal(rows.length, 1, `one select row for ${key}`);
  return rows[0] as Record<string, unknown> & { consensus?: ConsensusRow };
};

/**
 * A worker that writes `double.sh` (prints its argument doubled); candidate `wrong` gets negative numbers wrong (0),
 * which the check (positive numbers only) does not see.
 */
const doubler = (wrong: number) =>
  `if [ "$VERDICT_CANDIDATE" = ${wrong} ]; then printf '%s\\n' 'n=$1; if [ "$n" -lt 0 ]; then echo 0; else echo $((n * 2)); fi' > double.sh; else printf '%s\\n' 'echo $(($1 * 2))' > double.sh; fi`;
const doubleCheck = 'test "$(bash double.sh 3)" = 6 || { echo "double.sh 3 is not 6"; exit 1; }';

describe('workflows: best-of-N consensus', function () {
  this.timeout(240000);

  it('the largest group that behaves alike wins over the first to pass; the select row records the groups, the splitting input and why', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# fixture\n', 'cases.sh': "printf '%s\\n' 1 -3 0 7\n" });
    const file = writeManifest(repo, {
      worktrees: true,
      max_parallel: 1,
      tasks: [
        scriptTask('fix', doubler(1), doubleCheck, {
          repeat: 4,
          select: 'consensus',
          max_attempts: 1,
          distinguish: { inputs: 'bash cases.sh', probe: 'bash double.sh "$VERDICT_CASE"', max_inputs: 20, timeout_s: 20 },
        }),
        scriptTask('next', 'bash double.sh -3 > seen.txt', 'grep -qx -- -6 seen.txt || { echo "the winner is wrong on -3"; exit 1; }', { after: ['fix'] }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const s = state(home);
    // Candidate 1 passed first (max_parallel 1) but is wrong on -3: first-pass would have kept it.
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'PASS'],
        ['fix--c2', 'PASS'],
        ['fix--c3', 'PASS'],
        ['fix--c4', 'PASS'],
        ['next', 'PASS'],
      ],
    );
    const group = byKey(s, 'fix');
    assert.equal(group.winner, 'fix--c2');
    assert.equal(group.commit, byKey(s, 'fix--c2').commit);
    assert.equal(git(repo, 'rev-parse', `verdict/${s.runId}/fix`), byKey(s, 'fix--c2').commit);
    assert.deepEqual(group.consensus, { groups: [['fix--c2', 'fix--c3', 'fix--c4'], ['fix--c1']], inputs: 4, splitting: 1, decided: 'largest' });
    assert.match(
      group.reason ?? '',
      /winner: candidate 2 \(fix--c2, script[^)]*\); the largest of 2 groups \(3 of 4: candidate 2, candidate 3, candidate 4\) behaved alike; 1 of 4 input\(s\) split them; the first to pass of it: candidate 2/,
    );
    const row = selectRowOf(home, 'fix');
    assert.equal(row.candidate, 2);
    const c = row.consensus as ConsensusRow;
    assert.deepEqual([c.inputs, c.given, c.decided, c.tie], [4, 4, 'largest', null]);
    assert.deepEqual(c.splitting, [{ input: 1, text: '-3' }]);
    assert.deepEqual(
      c.groups.map((g) => [g.size, g.members.map((m) => [m.key, m.candidate, m.engine])]),
      [
        [
          3,
          [
            ['fix--c2', 2, 'script'],
            ['fix--c3', 3, 'script'],
            ['fix--c4', 4, 'script'],
          ],
        ],
        [1, [['fix--c1', 1, 'script']]],
      ],
    );
    // The records: each candidate's behaviour per input; the scratch (tree copies, inputs) is gone.
    const receipt = JSON.parse(fs.readFileSync(path.join(home, 'runs', s.runId, 'tasks', 'fix', 'consensus-1', 'receipt.json'), 'utf8')) as {
      inputs: string[];
      behaviours: Record<string, { exitCode: number; preview: string }[]>;
    };
    assert.deepEqual(receipt.inputs, ['1', '-3', '0', '7']);
    assert.deepEqual(
      receipt.behaviours['fix--c1']?.map((b) => b.preview),
      ['2\n', '0\n', '0\n', '14\n'],
    );
    assert.deepEqual(
      receipt.behaviours['fix--c3']?.map((b) => b.preview),
      ['2\n', '-6\n', '0\n', '14\n'],
    );
    assert.equal(fs.existsSync(path.join(home, 'scratch', s.runId, 'fix', 'consensus-1')), false);
    // The views: `verdict runs RUN --json` carries the decision on the task's line.
    const j = await cli(['runs', s.runId, '--home', home, '--json']);
    assert.equal(j.exitCode, 0, j.all);
    assert.match(j.stdout, /"consensus":\s*\{\s*"groups":\s*\[\s*\[\s*"fix--c2"/);
  });

  it("a hostile candidate's probe reaches no other candidate's tree, no record and no git dir, cannot change the inputs, and behaves only as its answer", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# fixture\n' });
    const home = path.join(dir, 'home');
    // Candidate 1 passes the check like the others, but its double.sh, run by the probe, tries to read its siblings'
    // worktrees and trees (their paths learnt while it worked), the run's records, the repository's git dir, and to
    // change the input every candidate is given; it prints what it managed.
    const hostile = [
      'echo "$(dirname "$VERDICT_TASK_DIR")" > sibs.txt',
      `echo ${JSON.stringify(path.join(home, 'runs'))} > runs.txt`,
      `echo ${JSON.stringify(path.join(repo, '.git'))} > gitdir.txt`,
      "cat > double.sh <<'EOF'",
      // Only when the probe runs it (its check sees an honest doubler).
      'if [ -n "$VERDICT_CASE_FILE" ]; then',
      'sibs=$(cat sibs.txt)',
      'for c in 2 3; do cat "$sibs/fix--c$c/double.sh" 2>/dev/null && echo "READ-OK worktree c$c"; cat ../c$c/double.sh 2>/dev/null && echo "READ-OK tree c$c"; done',
      'ls "$(cat runs.txt)" 2>/dev/null | grep -q . && echo "READ-OK records"',
      'test -e "$(cat gitdir.txt)/HEAD" && echo "READ-OK git"',
      '(echo 999 > "$VERDICT_CASE_FILE") 2>/dev/null && echo "WRITE-OK case"',
      '(rm -f "$VERDICT_CASE_FILE") 2>/dev/null; test -e "$VERDICT_CASE_FILE" || echo "WRITE-OK removed"',
      '(touch "$(dirname "$VERDICT_CASE_FILE")/planted") 2>/dev/null && echo "WRITE-OK planted"',
      '(echo x > own-tree-file) 2>/dev/null && echo "WRITE-OK own tree"',
      'fi',
      'echo $(($1 * 2))',
      'EOF',
    ].join('\n');
    const spec = `if [ "$VERDICT_CANDIDATE" = 1 ]; then\n${hostile}\nelse printf '%s\\n' 'echo $(($1 * 2))' > double.sh; fi`;
    const file = writeManifest(repo, {
      worktrees: true,
      max_parallel: 1,
      tasks: [
        scriptTask('fix', spec, doubleCheck, {
          repeat: 3,
          select: 'consensus',
          max_attempts: 1,
          distinguish: { inputs: "printf '%s\\n' 2 5", probe: 'bash double.sh "$(cat "$VERDICT_CASE_FILE")"', timeout_s: 20 },
        }),
      ],
    });
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const s = state(home);
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'PASS'],
        ['fix--c2', 'PASS'],
        ['fix--c3', 'PASS'],
      ],
      JSON.stringify(s.tasks.map((t) => t.reason)),
    );
    const receipt = JSON.parse(fs.readFileSync(path.join(home, 'runs', s.runId, 'tasks', 'fix', 'consensus-1', 'receipt.json'), 'utf8')) as {
      behaviours: Record<string, { exitCode: number; preview: string }[]>;
    };
    // The hostile probe ran (it doubled its input) and managed nothing else: it printed only its answer.
    assert.deepEqual(
      receipt.behaviours['fix--c1']?.map((b) => [b.exitCode, b.preview]),
      [
        [0, '4\n'],
        [0, '10\n'],
      ],
    );
    // The others, probed after it, read the inputs as made: 2 and 5, not 999.
    for (const k of ['fix--c2', 'fix--c3'])
      assert.deepEqual(
        receipt.behaviours[k]?.map((b) => b.preview),
        ['4\n', '10\n'],
      );
    assert.equal(byKey(s, 'fix').consensus?.decided, 'largest');
  });

  it('behaviours that differ tie two groups: the group with the member that passed first wins (no rank), and the tie is recorded', async () => {
    const dir = tempDir();
    const spec = `if [ $((VERDICT_CANDIDATE % 2)) = 1 ]; then printf '%s\\n' 'echo odd-$1' > say.sh; else printf '%s\\n' 'echo even-$1' > say.sh; fi`;
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 1,
      tasks: [
        scriptTask('fix', spec, 'test -s say.sh', {
          repeat: 4,
          select: 'consensus',
          max_attempts: 1,
          distinguish: { inputs: 'echo a', probe: 'bash say.sh "$VERDICT_CASE"' },
        }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const s = state(home);
    assert.equal(byKey(s, 'fix').winner, 'fix--c1');
    const c = selectRowOf(home, 'fix').consensus as ConsensusRow;
    assert.equal(c.decided, 'tie-cheapest');
    assert.match(
      c.tie ?? '',
      /^2 groups tied at 2 each \(\{candidate 1, candidate 3\} vs \{candidate 2, candidate 4\}\); 1 of 1 input\(s\) split them; on single inputs the other candidates answered as \{candidate 1, candidate 3\} 0 time\(s\), \{candidate 2, candidate 4\} 0 time\(s\)$/,
    );
    assert.match(c.why, /wins: candidate 1$/);
  });

  it('consensus cannot decide (a probe that never exits 0, an inputs command that prints nothing): the select row says so and the first to pass wins', async () => {
    const dir = tempDir();
    const spec = `echo "c$VERDICT_CANDIDATE" > out.txt`;
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 1,
      tasks: [
        scriptTask('never', spec, 'test -s out.txt', {
          repeat: 2,
          select: 'consensus',
          max_attempts: 1,
          distinguish: { inputs: 'echo a; echo b', probe: 'cat out.txt; exit 3' },
        }),
        scriptTask('empty', spec, 'test -s out.txt', {
          repeat: 2,
          select: 'consensus',
          max_attempts: 1,
          distinguish: { inputs: 'true', probe: 'cat out.txt' },
        }),
        scriptTask('broken', spec, 'test -s out.txt', {
          repeat: 2,
          select: 'consensus',
          max_attempts: 1,
          distinguish: { inputs: 'echo nope >&2; exit 4', probe: 'cat out.txt' },
        }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const s = state(home);
    const expected: Record<string, RegExp> = {
      never:
        /^consensus could not decide: the probe never exited 0 on any input of any candidate \(2 input\(s\)\); falling back to the first to pass \(candidate 1\)$/,
      empty:
        /^consensus could not decide: the inputs command made no input \(it printed no line and wrote no file into \$VERDICT_CASES\); falling back to the first to pass \(candidate 1\)$/,
      broken: /^consensus could not decide: the inputs command exited 4: nope; falling back to the first to pass \(candidate 1\)$/,
    };
    for (const [key, why] of Object.entries(expected)) {
      assert.equal(byKey(s, key).winner, `${key}--c1`);
      assert.equal(byKey(s, key).consensus?.decided, 'undecided');
      const c = selectRowOf(home, key).consensus as ConsensusRow;
      assert.equal(c.decided, 'undecided', key);
      assert.match(c.why, why, key);
      assert.match(byKey(s, key).reason ?? '', why.source.startsWith('^') ? new RegExp(why.source.slice(1)) : why);
    }
  });

  it('bad input is refused at load with its position: consensus without distinguish, distinguish without consensus, max_inputs out of range, stop_after above N or with first-pass', async () => {
    const dir = tempDir();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ repeat: 2, select: 'consensus' }, /tasks\[0\]\.select.*"select": "consensus" needs a "distinguish" section/],
      [
        { repeat: 2, select: 'all', distinguish: { inputs: 'echo a', probe: 'true' } },
        /tasks\[0\]\.distinguish.*"distinguish" is read only with "select": "consensus"/,
      ],
      [{ repeat: 2, select: 'consensus', distinguish: { inputs: 'echo a', probe: 'true', max_inputs: 0 } }, /max_inputs/],
      [{ repeat: 2, select: 'consensus', distinguish: { inputs: 'echo a', probe: 'true', max_inputs: 500 } }, /max_inputs/],
      [{ repeat: 2, select: 'all', stop_after: 3 }, /tasks\[0\]\.stop_after.*"stop_after" is 3 but the task has 2 candidate\(s\)/],
      [{ repeat: 2, stop_after: 1 }, /tasks\[0\]\.stop_after.*"first-pass" already stops the other candidates/],
    ];
    for (const [extra, message] of cases) {
      const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('fix', 'true', 'true', extra)] });
      const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard']);
      assert.equal(r.exitCode, 2, r.all);
      assert.match(r.all.replace(/\n/g, ' '), message, JSON.stringify(extra));
      assert.match(r.all, /test\.swarm\.json:\d+:\d+/, 'the position in the file');
    }
  });
});

describe('workflows: best-of-N stop_after', function () {
  this.timeout(240000);

  it('once K passed, the candidates not started are CANCELLED with no attempt spent, a running one is stopped; the group is decided among those that passed', async () => {
    const dir = tempDir();
    // Candidate 1 passes at once and 2 after 3 s; 3 takes 1's slot and runs until stopped; 4 and 5 wait for a slot
    // (max_parallel 2) and never start.
    const spec =
      'if [ "$VERDICT_CANDIDATE" = 1 ]; then echo ok > out.txt; elif [ "$VERDICT_CANDIDATE" = 2 ]; then sleep 3; echo ok > out.txt; else while :; do sleep 0.2; done; fi';
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 2,
      tasks: [scriptTask('fix', spec, 'test -s out.txt', { repeat: 5, select: 'all', stop_after: 2, max_attempts: 1, timeout_s: 120 })],
    });
    const home = path.join(dir, 'home');
    const started = Date.now();
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    assert.ok(Date.now() - started < 100_000, 'the looping candidate was stopped, not waited for');
    const s = state(home);
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'PASS'],
        ['fix--c2', 'PASS'],
        ['fix--c3', 'CANCELLED'],
        ['fix--c4', 'CANCELLED'],
        ['fix--c5', 'CANCELLED'],
      ],
    );
    assert.equal(byKey(s, 'fix').winner, 'fix--c1');
    for (const k of ['fix--c3', 'fix--c4', 'fix--c5']) assert.equal(byKey(s, k).reason, 'cancelled: stop_after 2 reached (candidate 1, candidate 2 passed)', k);
    // No attempt of 4 or 5 was spent; 3's running attempt was stopped and recorded CANCELLED.
    assert.deepEqual(
      ['fix--c3', 'fix--c4', 'fix--c5'].map((k) => byKey(s, k).attempts.map((a) => a.verdict)),
      [['CANCELLED'], [], []],
    );
    assert.deepEqual(
      readRows(home)
        .filter((row) => row.step === 'work')
        .map((row) => [row.task_key, row.verdict])
        .sort(),
      [
        ['fix--c1', 'PASS'],
        ['fix--c2', 'PASS'],
        ['fix--c3', 'CANCELLED'],
      ],
    );
  });

  it('consensus: once enough candidates agree that no other group can outnumber them, the rest are stopped before stop_after is reached', async () => {
    const dir = tempDir();
    // Candidates 1-3 write the same right double.sh at once; 4 and 5 would take 200 s (and pass): with max_parallel 1,
    // once 3 agree, the 2 left cannot outnumber them, and they are stopped (stop_after 5 alone would wait for them).
    const spec = `if [ "$VERDICT_CANDIDATE" -gt 3 ]; then sleep 200; fi; printf '%s\\n' 'echo $(($1 * 2))' > double.sh`;
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 1,
      tasks: [
        scriptTask('fix', spec, doubleCheck, {
          repeat: 5,
          select: 'consensus',
          stop_after: 5,
          max_attempts: 1,
          timeout_s: 400,
          distinguish: { inputs: "printf '%s\\n' -3 0", probe: 'bash double.sh "$VERDICT_CASE"', timeout_s: 20 },
        }),
      ],
    });
    const home = path.join(dir, 'home');
    const started = Date.now();
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    assert.ok(Date.now() - started < 190_000, 'the slow candidates were stopped, not waited for');
    const s = state(home);
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'PASS'],
        ['fix--c2', 'PASS'],
        ['fix--c3', 'PASS'],
        ['fix--c4', 'CANCELLED'],
        ['fix--c5', 'CANCELLED'],
      ],
    );
    for (const k of ['fix--c4', 'fix--c5'])
      assert.equal(
        byKey(s, k).reason,
        'cancelled: consensus reached: candidate 1, candidate 2, candidate 3 behave alike on 2 input(s); no other group can outnumber them (the next largest has 0, with 2 candidate(s) not yet compared)',
        k,
      );
    // 5 never started; the group is decided among those that passed, on the early comparison's inputs.
    assert.deepEqual(byKey(s, 'fix--c5').attempts, []);
    assert.deepEqual(byKey(s, 'fix').consensus, { groups: [['fix--c1', 'fix--c2', 'fix--c3']], inputs: 2, splitting: 0, decided: 'largest' });
    const records = fs.readdirSync(path.join(home, 'runs', s.runId, 'tasks', 'fix')).sort();
    assert.ok(records.includes('consensus-1') && records.some((n) => /^consensus-1-early-\d+$/.test(n)), JSON.stringify(records));
  });
});
