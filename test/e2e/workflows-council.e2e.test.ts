import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// Council (docs/workflows.md "Council"): independent answers, anonymous non-self peer review, a chair's synthesis.
// Members 1 and 3 are the same model: a naive "review everyone else" would have model m1 review its own model's
// answer. The record (inputs mapping) and what each reviewer actually read must show it never did.

interface InputsState {
  entries: { name: string; path: string; key: string; member: string }[];
  excluded: string[];
}
interface StateJson {
  inputNames?: Record<string, Record<string, string>>;
  tasks: { key: string; status: string; reason?: string; dir: string; engine: string; model: string | null; inputs?: InputsState }[];
}

function stateOf(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}

describe('workflows: council', function () {
  this.timeout(240000);

  it("answers, non-self anonymous reviews (a twin model's answer excluded too), the chair keeps the disagreements; every step an eval row on its model", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // Each answer carries its author's key, so what a reviewer read can be traced back.
    const question = 'echo "## Answer" > answer.md; echo "answer from $VERDICT_TASK_KEY" >> answer.md';
    // A review may change only review.md (allow_paths): what the reviewer saw goes there.
    const review =
      '{ echo "names: $(ls "$VERDICT_INPUTS/answers" | tr "\\n" " ")"; cat "$VERDICT_INPUTS"/answers/*/answer.md; echo "listing:"; (cd "$VERDICT_INPUTS" && ls -R .); } > review.md';
    const chair = [
      '{ echo "## Synthesis"; for d in "$VERDICT_INPUTS"/answers/*/; do echo "- $(basename "$d"): $(tail -n 1 "$d/answer.md")"; done;',
      '  echo "## Unresolved disagreements"; for r in "$VERDICT_INPUTS"/reviews/*/; do echo "- reviewer $(basename "$r") read $(grep -c "answer from" "$r/review.md") answer(s)"; done; } > synthesis.md',
    ].join('\n');
    const task = scriptTask('q', question, 'grep -q "^answer from " answer.md || { echo "answer.md has no answer"; exit 1; }', {
      council: {
        members: [
          { engine: 'script', model: 'm1' },
          { engine: 'script', model: 'm2' },
          { engine: 'script', model: 'm1' },
        ],
        review: { spec: review },
        chair: {
          engine: 'script',
          model: 'chair-model',
          spec: chair,
          check: 'grep -qx "## Unresolved disagreements" synthesis.md && test "$(grep -c "^- reviewer" synthesis.md)" = 3 || { cat synthesis.md; exit 1; }',
        },
      },
    });
    const file = writeManifest(dir, { workdir: 'w', max_parallel: 3, tasks: [task] });
    const lint = await cli(['lint', file]);
    assert.match(lint.all, / 0 error\(s\)/, lint.all);
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status, t.model]),
      [
        ['q--a1', 'PASS', 'm1'],
        ['q--a2', 'PASS', 'm2'],
        ['q--a3', 'PASS', 'm1'],
        ['q--r1', 'PASS', 'm1'],
        ['q--r2', 'PASS', 'm2'],
        ['q--r3', 'PASS', 'm1'],
        ['q', 'PASS', 'chair-model'],
      ],
    );
    const letters = state.inputNames?.q ?? {};
    assert.deepEqual(Object.keys(letters).sort(), ['q--a1', 'q--a2', 'q--a3']);
    assert.deepEqual(Object.values(letters).sort(), ['A', 'B', 'C']);
    const task_ = (k: string) => state.tasks.find((t) => t.key === k) as StateJson['tasks'][number];
    const read = (k: string, f: string) => fs.readFileSync(path.join(task_(k).dir, f), 'utf8');
    // Reviewers 1 and 3 (model m1): only answer 2 (m2); their own answer and their twin's were excluded, and recorded so.
    for (const k of ['q--r1', 'q--r3']) {
      const inputs = task_(k).inputs as InputsState;
      assert.deepEqual(
        inputs.entries.map((e) => [e.key, e.path]),
        [['q--a2', `answers/${letters['q--a2']}`]],
      );
      assert.deepEqual(inputs.excluded, ['q--a1', 'q--a3']);
      const seen = read(k, 'review.md');
      assert.equal(seen.split('\n')[0], `names: ${letters['q--a2']} `);
      assert.deepEqual(seen.match(/answer from q--a\d/g), ['answer from q--a2']);
      assert.doesNotMatch(seen.slice(seen.indexOf('listing:')), /reviews|q--/);
    }
    // Reviewer 2 (m2): answers 1 and 3, under their letters, never its own.
    const r2 = task_('q--r2').inputs as InputsState;
    assert.deepEqual(
      r2.entries.map((e) => [e.key, e.path]),
      [
        ['q--a1', `answers/${letters['q--a1']}`],
        ['q--a3', `answers/${letters['q--a3']}`],
      ],
    );
    assert.deepEqual(r2.excluded, ['q--a2']);
    assert.doesNotMatch(read('q--r2', 'review.md'), /answer from q--a2/);
    assert.match(read('q--r2', 'review.md'), /answer from q--a1[\s\S]*answer from q--a3|answer from q--a3[\s\S]*answer from q--a1/);
    // The chair: every answer and every review, a review named after the member that wrote it.
    const chairInputs = task_('q').inputs as InputsState;
    assert.deepEqual(
      chairInputs.entries.map((e) => [e.key, e.path]),
      [
        ['q--a1', `answers/${letters['q--a1']}`],
        ['q--a2', `answers/${letters['q--a2']}`],
        ['q--a3', `answers/${letters['q--a3']}`],
        ['q--r1', `reviews/${letters['q--a1']}`],
        ['q--r2', `reviews/${letters['q--a2']}`],
        ['q--r3', `reviews/${letters['q--a3']}`],
      ],
    );
    const synthesis = read('q', 'synthesis.md');
    assert.match(synthesis, /^## Unresolved disagreements$/m);
    assert.match(synthesis, new RegExp(`^- reviewer ${letters['q--a2']} read 2 answer\\(s\\)$`, 'm'));
    assert.match(synthesis, new RegExp(`^- reviewer ${letters['q--a1']} read 1 answer\\(s\\)$`, 'm'));
    // Every answer, review and the chair is an ordinary eval row credited to its engine and model.
    assert.deepEqual(
      readRows(home)
        .map((row) => [row.task_key, row.worker_engine, row.model, row.verdict])
        .sort(),
      [
        ['q', 'script', 'chair-model', 'PASS'],
        ['q--a1', 'script', 'm1', 'PASS'],
        ['q--a2', 'script', 'm2', 'PASS'],
        ['q--a3', 'script', 'm1', 'PASS'],
        ['q--r1', 'script', 'm1', 'PASS'],
        ['q--r2', 'script', 'm2', 'PASS'],
        ['q--r3', 'script', 'm1', 'PASS'],
      ],
    );
  });

  it('lint: a council whose members are all one model (no one could review a peer), and files outside the task dir', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask('q', 'true', 'test -s answer.md', {
          council: { members: [{ engine: 'script' }, { engine: 'script' }], answer: '/tmp/a.md', chair: { check: 'test -s synthesis.md' } },
        }),
      ],
    });
    const r = await cli(['lint', file]);
    assert.notEqual(r.exitCode, 0, r.all);
    assert.match(r.all, /error \[council\].*member 1 \(script\) would have no answer to review/);
    assert.match(r.all, /error \[council\].*the file must be inside its task dir: "\/tmp\/a\.md" is absolute/);
    assert.equal((r.all.match(/would have no answer to review/g) ?? []).length, 1);
  });
});
