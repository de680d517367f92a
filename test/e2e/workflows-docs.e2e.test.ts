import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, tempDir } from '../helpers/fixtures';

/** The worked examples of docs/workflows.md: each ```jsonc block right after an `<!-- example: NAME -->` line. */
function examples(): Map<string, string> {
  const text = fs.readFileSync(path.resolve('docs/workflows.md'), 'utf8');
  const out = new Map<string, string>();
  for (const m of text.matchAll(/<!-- example: ([\w-]+) -->\n```jsonc\n([\s\S]*?)\n```/g)) out.set(m[1] as string, m[2] as string);
  return out;
}

interface StateJson {
  inputNames?: Record<string, Record<string, string>>;
  tasks: {
    key: string;
    status: string;
    reason?: string;
    winner?: string;
    scores?: Record<string, number>;
    dir: string;
    inputs?: { entries: { name: string; key: string }[] };
    critique?: { rounds: number; revisions: number; verified: number; dropped: number; unresolved: number; stopped: string | null };
  }[];
}

/** The config an example runs with (its custom engines): the ```json block right after `<!-- example-config: NAME -->`. */
function exampleConfig(name: string): string | null {
  const text = fs.readFileSync(path.resolve('docs/workflows.md'), 'utf8');
  return new RegExp(`<!-- example-config: ${name} -->\n\`\`\`json\n([\\s\\S]*?)\n\`\`\``).exec(text)?.[1] ?? null;
}

/**
 * Writes the example (and its config, if it has one) to a temp folder, lints it (no error, no warning) and runs it;
 * returns the run's state and rows.
 */
async function runExample(name: string): Promise<{ code: number; out: string; state: StateJson; rows: Record<string, unknown>[] }> {
  const text = examples().get(name);
  assert.ok(text, `docs/workflows.md has no example "${name}"`);
  const dir = tempDir();
  const file = path.join(dir, `${name}.swarm.jsonc`);
  fs.writeFileSync(file, text);
  const configText = exampleConfig(name);
  const config = configText === null ? [] : ['--config', path.join(dir, 'config.json')];
  if (configText !== null) fs.writeFileSync(path.join(dir, 'config.json'), configText);
  const lint = await cli(['lint', file, ...config]);
  assert.match(lint.all, / 0 error\(s\), 0 warning\(s\)/, lint.all);
  const home = path.join(dir, 'home');
  const r = await cli(['run', file, '--home', home, ...config, '--no-dashboard']);
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
  return { code: r.exitCode ?? -1, out: r.all, state, rows: readRows(home) };
}

describe('docs/workflows.md: every worked example runs as written', function () {
  this.timeout(240000);

  it('lists the examples this file runs', () => {
    assert.deepEqual([...examples().keys()].sort(), [
      'best-of-n',
      'consensus',
      'council',
      'critique',
      'generated',
      'inputs',
      'phases',
      'ranked',
      'suite',
      'validated',
    ]);
  });

  it('suite: candidate 1 passes its check and fails the suite, candidate 2 wins', async () => {
    const { code, out, state, rows } = await runExample('suite');
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['square', 'PASS'],
        ['square--c1', 'FAIL'],
        ['square--c2', 'PASS'],
      ],
    );
    assert.equal(state.tasks[0]?.winner, 'square--c2');
    const work = (key: string) => rows.find((r) => r.task_key === key && r.step === 'work');
    assert.match(String(work('square--c1')?.notes), /^the check passed, but the suite `for t in tests\/\*\.sh; do .*` exited 1: triple 4 gave 7/);
    assert.equal(work('square--c1')?.check_exit_code, 0);
    assert.deepEqual(
      [work('square--c1'), work('square--c2')].map((r) => (r?.suite as { passed: boolean }).passed),
      [false, true],
    );
    assert.match(fs.readFileSync((work('square--c1')?.suite as { log: string }).log, 'utf8'), /triple 4 gave 7\n$/);
  });

  it('best-of-n: candidate 1 fails, 2 wins, 3 is cancelled naming it', async () => {
    const { code, out, state, rows } = await runExample('best-of-n');
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['slug', 'PASS'],
        ['slug--c1', 'FAIL'],
        ['slug--c2', 'PASS'],
        ['slug--c3', 'CANCELLED'],
      ],
    );
    assert.equal(state.tasks[0]?.winner, 'slug--c2');
    assert.match(state.tasks[0]?.reason ?? '', /^winner: candidate 2 \(slug--c2, script/);
    assert.equal(state.tasks[3]?.reason, 'cancelled: candidate 2 (slug--c2) passed first');
    assert.deepEqual(
      rows.map((r) => [r.task_key, r.step, r.verdict]),
      [
        ['slug--c1', 'work', 'FAIL'],
        ['slug--c2', 'work', 'PASS'],
        ['slug', 'select', 'PASS'],
      ],
    );
  });

  it('ranked: candidates 1 and 2 pass, 3 fails; the stand-in reviewer scores the shorter script higher, so candidate 2 wins', async () => {
    const { code, out, state, rows } = await runExample('ranked');
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['slug', 'PASS'],
        ['slug--c1', 'PASS'],
        ['slug--c2', 'PASS'],
        ['slug--c3', 'FAIL'],
      ],
    );
    assert.equal(state.tasks[0]?.winner, 'slug--c2');
    assert.deepEqual(state.tasks[0]?.scores, { 'slug--c1': 3, 'slug--c2': 10 });
    assert.match(
      state.tasks[0]?.reason ?? '',
      /^winner: candidate 2 \(slug--c2, script\); ranked: candidate 2 \([AB]\) wins with a mean score of 10 over 1 ranking\(s\)/,
    );
    assert.match(out, /ranking 2 passing candidates \(slug--c1, slug--c2\) by 1 reviewer\(s\)/);
    assert.deepEqual(
      rows.filter((r) => r.step !== 'work').map((r) => [r.task_key, r.step, r.worker_engine, r.verdict]),
      [
        ['slug', 'rank', 'shortest', 'PASS'],
        ['slug', 'select', 'script', 'PASS'],
      ],
    );
  });

  it('consensus: all three pass; candidates 2 and 3 agree on every input, 1 does not on two spaces, so candidate 2 wins over the first to pass', async () => {
    const { code, out, state, rows } = await runExample('consensus');
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['slug', 'PASS'],
        ['slug--c1', 'PASS'],
        ['slug--c2', 'PASS'],
        ['slug--c3', 'PASS'],
      ],
    );
    assert.equal(state.tasks[0]?.winner, 'slug--c2');
    assert.equal(
      state.tasks[0]?.reason,
      'winner: candidate 2 (slug--c2, script); the largest of 2 groups (2 of 3: candidate 2, candidate 3) behaved alike; 1 of 3 input(s) split them; the first to pass of it: candidate 2',
    );
    const select = rows.find((r) => r.step === 'select') as { consensus?: { splitting: unknown } } | undefined;
    assert.deepEqual(select?.consensus?.splitting, [{ input: 1, text: 'Two  Spaces' }]);
  });

  it('generated: the planner passes, its two tasks join the run and pass', async () => {
    const { code, out, state, rows } = await runExample('generated');
    assert.equal(code, 0, out);
    assert.match(out, /2 generated task\(s\) joined the run: words, digits/);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['plan', 'PASS'],
        ['words', 'PASS'],
        ['digits', 'PASS'],
      ],
    );
    assert.deepEqual(rows.map((r) => r.task_key).sort(), ['digits', 'plan', 'words']);
  });

  it('inputs: the reader sees the two drafts as A and B, mapped in state.json', async () => {
    const { code, out, state } = await runExample('inputs');
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['draft-1', 'PASS'],
        ['draft-2', 'PASS'],
        ['digest', 'PASS'],
      ],
    );
    const map = state.inputNames?.digest ?? {};
    assert.deepEqual(Object.values(map).sort(), ['A', 'B']);
    const digest = state.tasks[2] as StateJson['tasks'][number];
    const lines = fs.readFileSync(path.join(digest.dir, 'digest.txt'), 'utf8');
    assert.ok(lines.includes(`${map['draft-1']}: tabs are better`) && lines.includes(`${map['draft-2']}: spaces are better`), lines);
    assert.deepEqual(
      digest.inputs?.entries.map((e) => [e.key, e.name]),
      [
        ['draft-1', map['draft-1']],
        ['draft-2', map['draft-2']],
      ],
    );
  });

  it('validated: both workers pass, the validator judges both from its inputs', async () => {
    const { code, out, state, rows } = await runExample('validated');
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['sort--w1', 'PASS'],
        ['sort--w2', 'PASS'],
        ['sort', 'PASS'],
      ],
    );
    const v = state.tasks[2] as StateJson['tasks'][number];
    assert.equal(fs.readFileSync(path.join(v.dir, 'report.md'), 'utf8'), 'A: keep\nB: keep\n');
    assert.deepEqual(Object.values(state.inputNames?.sort ?? {}).sort(), ['A', 'B']);
    assert.deepEqual(rows.map((r) => r.task_key).sort(), ['sort', 'sort--w1', 'sort--w2']);
  });

  it('council: the m1 reviewers read only the m2 answer; the synthesis keeps the disagreement', async () => {
    const { code, out, state, rows } = await runExample('council');
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      ['a1', 'a2', 'a3', 'r1', 'r2', 'r3'].map((k) => [`indent--${k}`, 'PASS']).concat([['indent', 'PASS']]),
    );
    const dirOf = (k: string) => (state.tasks.find((t) => t.key === k) as StateJson['tasks'][number]).dir;
    const letter = state.inputNames?.indent?.['indent--a2'];
    for (const k of ['indent--r1', 'indent--r3']) assert.equal(fs.readFileSync(path.join(dirOf(k), 'review.md'), 'utf8'), `${letter} recommends tabs\n`);
    assert.equal(
      fs
        .readFileSync(path.join(dirOf('indent--r2'), 'review.md'), 'utf8')
        .split('\n')
        .filter(Boolean).length,
      2,
    );
    assert.equal(
      fs.readFileSync(path.join(dirOf('indent'), 'synthesis.md'), 'utf8'),
      '## Recommendation\nspaces\n## Unresolved disagreements\nthe answers differ: spaces tabs \n',
    );
    assert.deepEqual(rows.map((r) => [r.task_key, r.model]).sort(), [
      ['indent', 'chair'],
      ['indent--a1', 'm1'],
      ['indent--a2', 'm2'],
      ['indent--a3', 'm1'],
      ['indent--r1', 'm1'],
      ['indent--r2', 'm2'],
      ['indent--r3', 'm1'],
    ]);
  });

  it("critique: the critic's command shows the bug, the revision fixes it, round 2 verifies nothing", async () => {
    const { code, out, state, rows } = await runExample('critique');
    assert.equal(code, 0, out);
    assert.match(out, /critique stopped: no verified criticism remains; 0 unresolved/);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [['slug', 'PASS']],
    );
    assert.deepEqual(state.tasks[0]?.critique && { ...state.tasks[0].critique, stopped: state.tasks[0].critique.stopped }, {
      report: (state.tasks[0]?.critique as { report?: string }).report,
      rounds: 2,
      revisions: 1,
      verified: 1,
      dropped: 0,
      unresolved: 0,
      stopped: 'no verified criticism remains',
    });
    assert.deepEqual(
      rows.map((r) => [r.step, r.attempt, r.worker_engine, r.verdict]),
      [
        ['work', 1, 'script', 'PASS'],
        ['critique', 1, 'slug-critic', 'PASS'],
        ['work', 2, 'script', 'PASS'],
        ['critique', 2, 'slug-critic', 'PASS'],
      ],
    );
  });

  it("phases: one implementer per file, then another engine's tests pass on both", async () => {
    const { code, out, state, rows } = await runExample('phases');
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['case--impl-1', 'PASS'],
        ['case--impl-2', 'PASS'],
        ['case', 'PASS'],
      ],
    );
    assert.deepEqual(rows.map((r) => [r.task_key, r.worker_engine]).sort(), [
      ['case', 'case-tester'],
      ['case--impl-1', 'script'],
      ['case--impl-2', 'script'],
    ]);
  });
});
