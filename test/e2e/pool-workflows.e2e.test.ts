import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { cli } from '../helpers/cli';
import { git, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { LEASE_MS, poolSuite, type PoolWorker as Worker, repoAndRemote, startPoolWorker as startWorker, unsandboxed, workersUp } from '../helpers/pool-workers';

// Workflows whose tasks read their prerequisites' sealed work (validate, council: `inputs`) and ranked best-of-N, run
// over a worker pool (docs/scale.md "Workflows on the pool"): the payload carries each input as (name, commit), the
// worker copies it from the remote as a local run does; the ranking reviewers run on the orchestrator.

interface InputsState {
  dir: string;
  entries: { name: string; path: string; key: string; member: string; source: string }[];
  excluded: string[];
}
interface StateJson {
  runId: string;
  inputNames?: Record<string, Record<string, string>>;
  tasks: {
    key: string;
    status: string;
    reason?: string;
    commit: string | null;
    model: string | null;
    winner?: string;
    scores?: Record<string, number>;
    inputs?: InputsState;
  }[];
}

function stateOf(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}

/** The payloads the orchestrator queued for `runId` (pg-boss's job table), as JSON text. */
async function payloads(url: string, runId: string): Promise<{ key: string; text: string }[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query(`SELECT data FROM pgboss.job WHERE data->>'runId' = $1`, [runId]);
    return (r.rows as { data: { key: string } }[]).map((row) => ({ key: row.data.key, text: JSON.stringify(row.data) }));
  } finally {
    await c.end();
  }
}

describe('workflows over the worker pool (validate, council, ranked)', function () {
  this.timeout(300_000);
  const { url: poolUrl, workers } = poolSuite();

  /** Two workers (script engine) on the pool; returns them once both are up. */
  async function twoWorkers(url: string): Promise<[Worker, Worker]> {
    const a = startWorker(url, 'w1', 'script');
    const b = startWorker(url, 'w2', 'script');
    workers.push(a, b);
    await workersUp([a, b]);
    return [a, b];
  }

  it("validate: two workers' sealed work reaches the validator on a pool worker under letters, from the remote; the payload names no key and no path of the orchestrator", async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    await twoWorkers(url);
    // Worker 2's sort.sh is wrong: the validator must say so of its folder, whatever its letter.
    const spec =
      'if [ "$VERDICT_TASK_KEY" = sort--w2 ]; then printf "cat\\n# by %s\\n" "$VERDICT_TASK_KEY" > sort.sh; else printf "sort\\n# by %s\\n" "$VERDICT_TASK_KEY" > sort.sh; fi';
    const validator = [
      'for d in "$VERDICT_INPUTS"/*/; do n=$(basename "$d"); cp "$d/sort.sh" "$TMPDIR/$n.sh";',
      '  out=$(printf "b\\na\\n" | bash "$TMPDIR/$n.sh" | head -n 2 | tr "\\n" " ");',
      '  if [ "$out" = "a b " ]; then echo "$n: keep"; else echo "$n: reject"; fi; done > report.md',
      'echo "inputs: $VERDICT_INPUTS" >> report.md',
      // An anonymous reader's git dir is hidden: no branch or commit message can say whose each letter is.
      'git log --all --oneline >/dev/null 2>&1 && echo "git: readable" >> report.md || echo "git: hidden" >> report.md',
    ].join('\n');
    const task = scriptTask('sort', spec, 'test -s sort.sh', {
      max_attempts: 1,
      validate: {
        engines: [
          { engine: 'script', model: 'm1' },
          { engine: 'script', model: 'm2' },
        ],
        model: 'judge',
        spec: validator,
        report: 'report.md',
        check: 'test "$(grep -c \': keep$\' report.md)" = 1 && test "$(grep -c \': reject$\' report.md)" = 1 || { cat report.md; exit 1; }',
      },
    });
    const file = writeManifest(dir, { worktrees: true, repo, remote, max_parallel: 2, tasks: [task] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--pool', url, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    assert.equal(r.exitCode, 0, r.all);
    const state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['sort--w1', 'PASS'],
        ['sort--w2', 'PASS'],
        ['sort', 'PASS'],
      ],
    );
    const names = state.inputNames?.sort ?? {};
    assert.deepEqual(Object.values(names).sort(), ['A', 'B']);
    const validator_ = state.tasks.find((t) => t.key === 'sort');
    const w = (k: string) => state.tasks.find((t) => t.key === k)?.commit as string;
    // The orchestrator keeps whose each letter is, and which commit it held; the worker says where it copied them.
    assert.deepEqual(
      validator_?.inputs?.entries.map((e) => [e.key, e.name, e.source]),
      [
        ['sort--w1', names['sort--w1'], w('sort--w1')],
        ['sort--w2', names['sort--w2'], w('sort--w2')],
      ],
    );
    assert.match(validator_?.inputs?.dir ?? '', /^w[12]:.*\/runs\/.*\/tasks\/sort\/inputs$/);
    // The report (from the remote: the validator ran on a worker) judged each folder by its content.
    const report = git(remote, 'show', `${validator_?.commit as string}:report.md`);
    assert.match(report, new RegExp(`^${names['sort--w1']}: keep$`, 'm'));
    assert.match(report, new RegExp(`^${names['sort--w2']}: reject$`, 'm'));
    assert.match(report, /^git: hidden$/m);
    // VERDICT_INPUTS is the worker's folder, never a path of the orchestrator's machine.
    assert.doesNotMatch(report, new RegExp(home.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    // The validator's branch holds its report, not the workers' work (inputs are read beside the tree, not merged).
    assert.deepEqual(
      git(remote, 'ls-tree', '--name-only', validator_?.commit as string)
        .split('\n')
        .sort(),
      ['README.md', 'report.md'],
    );
    // Each input commit is on the remote under refs/verdict-sealed/<run>/<commit>.
    for (const k of ['sort--w1', 'sort--w2']) assert.equal(git(remote, 'rev-parse', `refs/verdict-sealed/${state.runId}/${w(k)}`), w(k));
    // The validator's payload: letters and commits; no worker key, no path of this machine.
    const sent = (await payloads(url, state.runId)).filter((p) => p.key === 'sort');
    assert.equal(sent.length, 1);
    assert.doesNotMatch(sent[0]?.text ?? '', /sort--w|"dir"/);
    assert.doesNotMatch(sent[0]?.text ?? '', new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '/(home|repo)'));
    const inputs = JSON.parse(sent[0]?.text ?? '{}').inputs as { anonymous: boolean; entries: { path: string; commit: string }[] };
    assert.deepEqual(new Set(inputs.entries.map((e) => `${e.path}=${e.commit}`)), new Set(['sort--w1', 'sort--w2'].map((k) => `${names[k]}=${w(k)}`)));
    assert.equal(inputs.anonymous, true);
    // Rows: the workers' and the validator's, each on a pool host.
    const rows = readRows(home);
    assert.deepEqual(rows.map((row) => [row.task_key, row.model, row.verdict]).sort(), [
      ['sort', 'judge', 'PASS'],
      ['sort--w1', 'm1', 'PASS'],
      ['sort--w2', 'm2', 'PASS'],
    ]);
    for (const row of rows) assert.match(String(row.host), /^w[12]$/);
  });

  it("council: answers, non-self anonymous reviews and the chair all run on pool workers; each reviewer read only the others' answers", async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    await twoWorkers(url);
    const question = 'echo "answer from $VERDICT_TASK_KEY" > answer.md';
    const review = '{ echo "names: $(ls "$VERDICT_INPUTS/answers" | tr "\\n" " ")"; cat "$VERDICT_INPUTS"/answers/*/answer.md; } > review.md';
    const chair =
      '{ for d in "$VERDICT_INPUTS"/answers/*/; do echo "answer $(basename "$d"): $(cat "$d/answer.md")"; done; for r in "$VERDICT_INPUTS"/reviews/*/; do echo "reviewer $(basename "$r") read $(grep -c "answer from" "$r/review.md")"; done; } > synthesis.md';
    const task = scriptTask('q', question, 'grep -q "^answer from " answer.md', {
      council: {
        members: [
          { engine: 'script', model: 'm1' },
          { engine: 'script', model: 'm2' },
          { engine: 'script', model: 'm3' },
        ],
        review: { spec: review },
        chair: {
          engine: 'script',
          model: 'chair-model',
          spec: chair,
          check: 'test "$(grep -c "^reviewer . read 2$" synthesis.md)" = 3 || { cat synthesis.md; exit 1; }',
        },
      },
    });
    const file = writeManifest(dir, { worktrees: true, repo, remote, max_parallel: 3, tasks: [task] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--pool', url, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    assert.equal(r.exitCode, 0, r.all);
    const state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['q--a1', 'PASS'],
        ['q--a2', 'PASS'],
        ['q--a3', 'PASS'],
        ['q--r1', 'PASS'],
        ['q--r2', 'PASS'],
        ['q--r3', 'PASS'],
        ['q', 'PASS'],
      ],
    );
    const letters = state.inputNames?.q ?? {};
    assert.deepEqual(Object.values(letters).sort(), ['A', 'B', 'C']);
    const t = (k: string) => state.tasks.find((x) => x.key === k) as StateJson['tasks'][number];
    const show = (k: string, f: string) => git(remote, 'show', `${t(k).commit as string}:${f}`);
    for (const n of [1, 2, 3]) {
      const others = [1, 2, 3].filter((m) => m !== n).map((m) => `q--a${m}`);
      assert.deepEqual(
        t(`q--r${n}`).inputs?.entries.map((e) => e.key),
        others,
      );
      assert.deepEqual(t(`q--r${n}`).inputs?.excluded, [`q--a${n}`]);
      const seen = show(`q--r${n}`, 'review.md');
      // It saw the others' answers under their letters, never its own.
      assert.equal(
        seen.split('\n')[0],
        `names: ${others
          .map((k) => letters[k])
          .sort()
          .join(' ')} `,
      );
      assert.deepEqual(
        (seen.match(/answer from q--a\d/g) ?? []).sort(),
        others.map((k) => `answer from ${k}`),
      );
    }
    const synthesis = show('q', 'synthesis.md');
    for (const n of [1, 2, 3]) assert.match(synthesis, new RegExp(`^answer ${letters[`q--a${n}`]}: answer from q--a${n}$`, 'm'));
    // No payload names a member's key (the anonymous names are letters) beyond the task's own key.
    for (const p of await payloads(url, state.runId)) {
      const body = JSON.parse(p.text) as { key: string; inputs: unknown; branch: string };
      const { key: _k, branch: _b, ...rest } = body;
      assert.doesNotMatch(JSON.stringify(rest), /q--[ar]\d/, `${p.key}'s payload names no member key`);
    }
    const rows = readRows(home);
    assert.equal(rows.length, 7);
    assert.deepEqual(new Set(rows.map((row) => row.verdict)), new Set(['PASS']));
    for (const row of rows) assert.match(String(row.host), /^w[12]$/);
  });

  it('ranked best-of-2: candidates on pool workers, the ranking reviewer here on their sealed commits fetched from the remote, under neutral names; a dependent on the pool starts from the winner', async function () {
    await requireSandbox(this);
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const home = path.join(dir, 'home');
    await twoWorkers(url);
    // The ranking reviewer, installed on this machine only: it fails loudly (LEAK, exit 7) on a candidate key in what
    // it sees or a readable VERDICT_HOME, then scores each solution 3 per GOOD in its diff.
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, 'rank-judge'),
      [
        '#!/bin/bash',
        'leak() { echo "LEAK: $*"; exit 7; }',
        'env | grep -v "^VERDICT_HOST_LOOPBACK=" | grep -q "^VERDICT_" && leak environment',
        'printf "%s" "$1" | grep -q -e "--c[0-9]" && leak "the prompt names a candidate key"',
        'found=$(grep -rl -e "--c[0-9]" . 2>/dev/null | head -3); [ -z "$found" ] || leak "material names a candidate key: $found"',
        `for p in runs runs.jsonl worktrees; do [ -e '${home}'/$p ] && leak "VERDICT_HOME/$p is readable"; done`,
        'json=""; for n in A B; do [ -e "$n.diff" ] || leak "no $n.diff"; s=$(( $(grep -o GOOD "$n.diff" | wc -l) * 3 )); [ $s -gt 10 ] && s=10; json="$json${json:+, }\\"$n\\": $s"; done',
        'echo "{\\"scores\\": {$json}}"',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { judge: { binary: 'rank-judge', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'judge-1' } } }),
    );
    const spec = 'case "$VERDICT_CANDIDATE" in 1) echo "GOOD" > out.txt;; 2) echo "GOOD GOOD GOOD" > out.txt;; esac';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      remote,
      max_parallel: 2,
      tasks: [
        scriptTask('fix', spec, 'grep -q GOOD out.txt', {
          repeat: 2,
          select: 'ranked',
          max_attempts: 1,
          rank: { rubric: 'More GOOD is better.', engines: ['judge'] },
        }),
        scriptTask('use', 'cp out.txt used.txt', 'grep -qx "GOOD GOOD GOOD" used.txt || { cat used.txt; exit 1; }', { after: ['fix'] }),
      ],
    });
    // Without the reviewer's binary here, the run is refused before it starts (it does not run on the workers).
    const refused = await cli(['run', file, '--home', home, '--config', config, '--pool', url, '--no-dashboard']);
    assert.equal(refused.exitCode, 2, refused.all);
    assert.match(
      refused.all,
      /engine "judge" needs the `rank-judge` command, which is not on PATH \(ranking reviewers, inputs engines and critics run on this machine, even on a pool run\)/,
    );
    const r = await cli(['run', file, '--home', home, '--config', config, '--pool', url, '--no-dashboard'], {
      env: { PATH: `${bin}:${process.env.PATH}`, VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    assert.equal(r.exitCode, 0, r.all);
    const state = stateOf(home);
    const t = (k: string) => state.tasks.find((x) => x.key === k) as StateJson['tasks'][number];
    assert.deepEqual(state.tasks.map((x) => [x.key, x.status]).sort(), [
      ['fix', 'PASS'],
      ['fix--c1', 'PASS'],
      ['fix--c2', 'PASS'],
      ['use', 'PASS'],
    ]);
    assert.equal(t('fix').winner, 'fix--c2');
    assert.deepEqual(t('fix').scores, { 'fix--c1': 3, 'fix--c2': 9 });
    const rows = readRows(home);
    // The candidates and the dependent ran on pool workers; the ranking here (no host of a worker).
    for (const k of ['fix--c1', 'fix--c2', 'use']) assert.match(String(rows.find((x) => x.task_key === k)?.host), /^w[12]$/, k);
    const rank = rows.filter((x) => x.step === 'rank');
    assert.deepEqual(
      rank.map((x) => [x.worker_engine, x.model, x.verdict]),
      [['judge', 'judge-1', 'PASS']],
    );
    assert.doesNotMatch(fs.readFileSync(String(rank[0]?.worker_log), 'utf8'), /LEAK/);
    const prompt = fs.readFileSync(String(rank[0]?.prompt_path), 'utf8');
    assert.match(prompt, /<solution-[0-9a-f]{16} name="A">[\s\S]*\+GOOD[\s\S]*<solution-[0-9a-f]{16} name="B">/);
    assert.doesNotMatch(prompt, /--c\d|verdict\//);
    // The winner's commit is the group's branch here; the dependent, on a worker, started from it (fetched from the remote).
    assert.equal(git(repo, 'rev-parse', `verdict/${state.runId}/fix`), t('fix--c2').commit);
    assert.equal(git(remote, 'show', `${t('use').commit as string}:used.txt`), 'GOOD GOOD GOOD');
  });

  it('"tree": "sparse" or "overlay" is refused before the run starts whichever names the pool (--pool here): a worker would build a full worktree', async () => {
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    for (const tree of ['sparse', 'overlay']) {
      const file = writeManifest(dir, {
        worktrees: true,
        repo,
        remote,
        tree,
        tasks: [scriptTask('t', 'echo x > src/x.txt', 'test -s src/x.txt', { sparse: ['src'] })],
      });
      const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--pool', poolUrl(), '--no-dashboard', ...unsandboxed]);
      assert.equal(r.exitCode, 2, r.all);
      assert.match(r.stderr, new RegExp(`"tree": "${tree}" is not supported on a worker pool yet`));
      assert.ok(!fs.existsSync(path.join(dir, 'home', 'runs')), 'no run was started');
    }
  });

  it('critique: the proposal runs on a pool worker, its critic here on the sealed commit fetched from the remote; the revision is dispatched to the pool and starts from the proposal', async function () {
    await requireSandbox(this);
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const home = path.join(dir, 'home');
    await twoWorkers(url);
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // Round 1: a file-and-line criticism and a command that fails on the proposal; round 2: nothing.
    const criticisms = [
      { file: 'slug.sh', line: 1, claim: 'spaces are not turned into hyphens' },
      { command: 'out=$(echo "a b" | bash slug.sh); test "$out" = a-b', claim: 'a b must become a-b' },
    ];
    fs.writeFileSync(
      path.join(bin, 'critic-crit'),
      `#!/bin/bash\nif [ "$VERDICT_CRITIQUE_ROUND" = 1 ]; then cat <<'JSON'\n${JSON.stringify({ criticisms })}\nJSON\nelse echo '{"criticisms": []}'; fi\n`,
      { mode: 0o755 },
    );
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { crit: { binary: 'critic-crit', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'crit-1' } } }),
    );
    // The revision only edits what the proposal wrote: started anywhere but from the proposal, it has nothing to edit.
    const spec = 'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo "tr A-Z a-z" > slug.sh; else test -s slug.sh && sed -i "s/\\$/ | tr \\" \\" -/" slug.sh; fi';
    const check = 'out=$(echo Hello | bash slug.sh); test "$out" = hello || { echo "slug.sh printed $out"; exit 1; }';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      remote,
      tasks: [scriptTask('slug', spec, check, { max_attempts: 1, expect_files: ['slug.sh'], critique: { critics: [{ engine: 'crit' }], rounds: 2 } })],
    });
    const r = await cli(['run', file, '--home', home, '--config', config, '--pool', url, '--no-dashboard'], {
      env: { PATH: `${bin}:${process.env.PATH}`, VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    assert.equal(r.exitCode, 0, r.all);
    const state = stateOf(home) as StateJson & { tasks: { critique?: { rounds: number; revisions: number; verified: number; stopped: string | null } }[] };
    const task = state.tasks[0] as StateJson['tasks'][number] & { critique?: { rounds: number; revisions: number; verified: number; stopped: string | null } };
    assert.equal(task.status, 'PASS', r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((x) => [x.step, x.attempt, x.worker_engine]),
      [
        ['work', 1, 'script'],
        ['critique', 1, 'crit'],
        ['work', 2, 'script'],
        ['critique', 2, 'crit'],
      ],
    );
    assert.deepEqual(
      rows.filter((x) => x.step === 'work').map((x) => x.verdict),
      ['PASS', 'PASS'],
    );
    for (const x of rows.filter((y) => y.step === 'work')) assert.match(String(x.host), /^w[12]$/);
    // Both criticisms were checked here against the proposal and verified.
    const c = rows[1]?.critique as { verified: number; dropped: number; criticisms: { verified: boolean; evidence: string }[] };
    assert.deepEqual([c.verified, c.dropped], [2, 0]);
    assert.match(c.criticisms[0]?.evidence ?? '', /^slug\.sh:1: tr A-Z a-z$/);
    assert.match(c.criticisms[1]?.evidence ?? '', /^exited 1/);
    assert.equal(task.critique?.revisions, 1);
    // The revision started from the proposal (its commit's parent) and is the task's branch, here and on the remote.
    const proposal = String(rows[0]?.commit);
    assert.equal(git(remote, 'show', `${task.commit as string}:slug.sh`), 'tr A-Z a-z | tr " " -');
    assert.equal(git(remote, 'rev-parse', `${task.commit as string}^`), proposal);
    assert.equal(git(repo, 'rev-parse', `verdict/${state.runId}/slug`), task.commit);
    // The round's worktree here was removed.
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);
  });
});
