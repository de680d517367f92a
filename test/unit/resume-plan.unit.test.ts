import fs from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';
import { tasksToRunAgain as plan } from '../../extension/core/run/resume';
import { workflowRerunRules } from '../../extension/core/run/workflows';
import type { RunState, TaskState } from '../../extension/core/live/state';

/** The plan with the workflow table's rules, as the CLI and the runner ask it. */
const tasksToRunAgain = (state: RunState, req: Parameters<typeof plan>[1]) => plan(state, req, workflowRerunRules);

const task = (key: string, status: string, extra: Partial<TaskState> = {}): TaskState =>
  ({
    key,
    engine: 'script',
    model: null,
    taskType: null,
    verified: null,
    status,
    dir: `/w/${key}`,
    branch: null,
    commit: null,
    port: null,
    attempts: [],
    ...extra,
  }) as TaskState;
const run = (tasks: TaskState[]): RunState => ({ runId: 'r1', tasks }) as RunState;

describe('which tasks a resume or rerun of a run that ended runs again (run/resume.ts tasksToRunAgain)', () => {
  // a PASS; b FAIL; c after b BLOCKED; d after c BLOCKED; e after a PASS; f CANCELLED; g SKIPPED; h INTERRUPTED.
  const graph = run([
    task('a', 'PASS'),
    task('b', 'FAIL'),
    task('c', 'BLOCKED', { after: ['b'] }),
    task('d', 'BLOCKED', { after: ['c'] }),
    task('e', 'PASS', { after: ['a'] }),
    task('f', 'CANCELLED'),
    task('g', 'SKIPPED'),
    task('h', 'INTERRUPTED'),
  ]);

  it('resume: every task that did not pass (BLOCKED included), in manifest order; PASS and SKIPPED stay', () => {
    assert.deepEqual(tasksToRunAgain(graph, { verb: 'resume' }), { again: ['b', 'c', 'd', 'f', 'h'] });
  });

  it('resume: nothing left is said, not run', () => {
    assert.deepEqual(tasksToRunAgain(run([task('a', 'PASS'), task('g', 'SKIPPED')]), { verb: 'resume' }), {
      refused: 'every task of run r1 passed; nothing to resume',
    });
  });

  it('rerun: the task and, transitively, its BLOCKED dependents; a PASS task may be rerun; its PASS dependents stay', () => {
    assert.deepEqual(tasksToRunAgain(graph, { verb: 'rerun', task: 'b' }), { again: ['b', 'c', 'd'] });
    assert.deepEqual(tasksToRunAgain(graph, { verb: 'rerun', task: 'a' }), { again: ['a'] });
    assert.deepEqual(tasksToRunAgain(graph, { verb: 'rerun', task: 'f' }), { again: ['f'] });
  });

  it('rerun: a dependent that read it as an input runs again whatever it ended (its verdict judged the work being replaced), transitively; a dependent that did not read it stays', () => {
    const read = (...keys: string[]) => ({
      inputs: {
        dir: '/i',
        entries: keys.map((k, i) => ({ name: String.fromCharCode(65 + i), path: String.fromCharCode(65 + i), key: k, member: k, source: 'c0ffee' })),
        excluded: [],
        omitted: [],
      },
    });
    const council = run([
      task('q--a1', 'PASS'),
      task('q--a2', 'PASS'),
      task('q--r1', 'PASS', { after: ['q--a1', 'q--a2'], ...read('q--a2') }),
      task('q--r2', 'FAIL', { after: ['q--a1', 'q--a2'], ...read('q--a1') }),
      task('q', 'PASS', { after: ['q--a1', 'q--a2', 'q--r1', 'q--r2'], ...read('q--a1', 'q--a2', 'q--r1') }),
      task('later', 'PASS', { after: ['q'] }),
    ]);
    assert.deepEqual(tasksToRunAgain(council, { verb: 'rerun', task: 'q--a2' }), { again: ['q--a2', 'q--r1', 'q'] });
    assert.deepEqual(tasksToRunAgain(council, { verb: 'rerun', task: 'q--r2' }), { again: ['q--r2'] });
  });

  it('rerun: a task BLOCKED by a prerequisite that did not pass is refused, naming it; an unknown task too', () => {
    assert.deepEqual(tasksToRunAgain(graph, { verb: 'rerun', task: 'c' }), { refused: 'c is BLOCKED by b (FAIL): rerun b, and c runs again once it passes' });
    assert.match((tasksToRunAgain(graph, { verb: 'rerun', task: 'zz' }) as { refused: string }).refused, /^run r1 has no task zz \(tasks: a, b, c/);
  });

  it('best-of-N: candidates of a task that won stay; the task entry itself is not rerun (its candidates are)', () => {
    const won = run([
      task('fix', 'PASS', { group: 'fix', select: 'first-pass', after: ['fix--c1', 'fix--c2'] }),
      task('fix--c1', 'PASS', { group: 'fix', candidate: 1 }),
      task('fix--c2', 'CANCELLED', { group: 'fix', candidate: 2 }),
      task('o', 'FAIL'),
    ]);
    assert.deepEqual(tasksToRunAgain(won, { verb: 'resume' }), { again: ['o'] });
    assert.match((tasksToRunAgain(won, { verb: 'rerun', task: 'fix' }) as { refused: string }).refused, /^fix is a best-of-N task and runs no worker itself/);
    const lost = run([
      task('fix', 'BLOCKED', { group: 'fix', select: 'first-pass', after: ['fix--c1', 'fix--c2'] }),
      task('fix--c1', 'FAIL', { group: 'fix', candidate: 1 }),
      task('fix--c2', 'FAIL', { group: 'fix', candidate: 2 }),
    ]);
    assert.deepEqual(tasksToRunAgain(lost, { verb: 'rerun', task: 'fix--c2' }), { again: ['fix', 'fix--c2'] });
  });

  it('a planner whose tasks joined the run is not rerun (the generate workflow refuses it); resume.ts names no workflow', () => {
    const planned = run([task('plan', 'PASS', { generated: ['g1', 'g2'] }), task('g1', 'FAIL'), task('g2', 'PASS')]);
    assert.deepEqual(tasksToRunAgain(planned, { verb: 'rerun', task: 'plan' }), {
      refused: 'plan is a planner whose tasks already joined the run (g1, g2); rerun those instead',
    });
    assert.deepEqual(tasksToRunAgain(planned, { verb: 'resume' }), { again: ['g1'] });
    const text = fs.readFileSync(path.resolve('extension', 'core', 'run', 'resume.ts'), 'utf8');
    assert.doesNotMatch(text, /\.select\b|\.generated\b|\.candidate\b|best-of-N|planner|critique/, 'resume.ts names a workflow');
  });
});
