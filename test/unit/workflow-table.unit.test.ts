import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  ATTEMPT_STEPS,
  RunWorkflows,
  WORKFLOWS,
  withWorkflowSteps,
  workflowReaderEngines,
  type Workflow,
  type WorkflowHost,
} from '../../extension/core/run/workflows';
import { DEFAULT_STEPS } from '../../extension/core/run/steps';
import type { Step } from '../../extension/core/run/steps/context';

const step = (name: string): Step => ({ name, phase: 'checking', when: () => true, run: async () => null });

describe('workflow plugins: one table (run/workflows/index.ts)', () => {
  it('puts each workflow step right after (or before) the default step it names: generate after red, before suite and review', () => {
    const names = ATTEMPT_STEPS.map((s) => s.name);
    assert.deepEqual(names, ['prepare', 'inputs', 'work', 'seal', 'guard', 'check', 'red', 'generate', 'suite', 'review', 'critique', 'deliver']);
    assert.equal(
      DEFAULT_STEPS.some((s) => s.name === 'generate'),
      false,
      'the default steps do not name the generate workflow',
    );
  });

  it('refuses a workflow step that follows a step the attempt does not have, naming the workflow and both steps', () => {
    const bad: Workflow = { name: 'nowhere', steps: [{ step: step('generate'), after: 'nosuch' as Step['name'] }] };
    assert.throws(() => withWorkflowSteps(DEFAULT_STEPS, [bad]), /workflow nowhere: its step generate follows step nosuch, which the attempt does not have/);
  });

  it('places a step anchored `before` a default step the same whatever the table order: generate before suite', () => {
    const generate = WORKFLOWS.find((w) => w.name === 'generate');
    assert.ok(generate?.steps?.some((s) => s.step.name === 'generate' && 'before' in s && s.before === 'suite'));
    const rest = WORKFLOWS.filter((w) => w !== generate);
    for (const order of [
      [generate!, ...rest],
      [...rest, generate!],
    ]) {
      assert.deepEqual(
        withWorkflowSteps(DEFAULT_STEPS, order).map((s) => s.name),
        ATTEMPT_STEPS.map((s) => s.name),
      );
    }
    const bad: Workflow = { name: 'nowhere', steps: [{ step: step('generate'), before: 'nosuch' as Step['name'] }] };
    assert.throws(() => withWorkflowSteps(DEFAULT_STEPS, [bad]), /workflow nowhere: its step generate precedes step nosuch, which the attempt does not have/);
  });

  it('keeps table order for two workflows after the same step, and leaves its input untouched', () => {
    const base = [step('prepare'), step('check')];
    const a: Workflow = { name: 'a', steps: [{ step: step('review'), after: 'check' }] };
    const b: Workflow = { name: 'b', steps: [{ step: step('critique'), after: 'prepare' }] };
    assert.deepEqual(
      withWorkflowSteps(base, [a, b]).map((s) => s.name),
      ['prepare', 'critique', 'check', 'review'],
    );
    assert.deepEqual(
      base.map((s) => s.name),
      ['prepare', 'check'],
    );
  });

  it('registers generate, and the runner, the task graph and the attempt reach it only through the table', () => {
    assert.ok(WORKFLOWS.some((w) => w.name === 'generate'));
    for (const f of ['runner.ts', 'task-graph.ts', 'attempt.ts', 'attempt-loop.ts', path.join('steps', 'index.ts'), path.join('steps', 'context.ts')]) {
      const text = fs.readFileSync(path.resolve('extension', 'core', 'run', f), 'utf8');
      assert.doesNotMatch(text, /workflows\/generate|joinGenerated|plannedTasks|generateStep|\.generated\b/, `${f} names the generate workflow`);
    }
  });

  it('registers critique, and the runner, the task graph, the attempt and resume name no critique: they reach it through the table', () => {
    const critique = WORKFLOWS.find((w) => w.name === 'critique');
    assert.ok(critique?.steps?.some((s) => s.step.name === 'critique' && 'after' in s && s.after === 'review'));
    assert.equal(
      DEFAULT_STEPS.some((s) => s.name === 'critique'),
      false,
      'the default steps do not name the critique workflow',
    );
    for (const f of [
      'runner.ts',
      'task-graph.ts',
      'attempt.ts',
      'attempt-loop.ts',
      'resume.ts',
      path.join('steps', 'index.ts'),
      path.join('steps', 'context.ts'),
    ]) {
      const text = fs.readFileSync(path.resolve('extension', 'core', 'run', f), 'utf8');
      assert.doesNotMatch(text, /critique|critic\b|revising|revision/i, `${f} names the critique workflow`);
    }
  });

  it('registers phases: step red follows check through the table, and the check step and the default steps name no phases', () => {
    const phases = WORKFLOWS.find((w) => w.name === 'phases');
    assert.ok(phases?.steps?.some((s) => s.step.name === 'red' && 'after' in s && s.after === 'check'));
    assert.equal(
      DEFAULT_STEPS.some((s) => s.name === 'red'),
      false,
      'the default steps do not name the phases workflow',
    );
    const spec = (red: boolean) => ({ spec: red ? { red: [{ file: 'a', implement: 'k--impl-1' }] } : {} }) as never;
    assert.equal(phases?.checkOnCopy?.(spec(true)), true);
    assert.equal(phases?.checkOnCopy?.(spec(false)), false);
    for (const f of [
      'runner.ts',
      'task-graph.ts',
      'attempt.ts',
      'attempt-loop.ts',
      path.join('steps', 'index.ts'),
      path.join('steps', 'check.ts'),
      path.join('steps', 'context.ts'),
    ]) {
      const text = fs.readFileSync(path.resolve('extension', 'core', 'run', f), 'utf8');
      assert.doesNotMatch(text, /spec\.red\b|rec\.red\b|workflows\/phases|redStep|phases/, `${f} names the phases workflow`);
    }
  });

  it("the run's preflight names no workflow: the engines of a task's critics, ranking reviewers and inputs engine come from the table", () => {
    const text = fs.readFileSync(path.resolve('extension', 'core', 'run', 'preflight.ts'), 'utf8');
    assert.doesNotMatch(text, /\.critique\b|\.critics\b|\.rank\b|\.distinguish\b|\.select\b/, 'preflight.ts names a workflow');
    const spec = {
      select: 'consensus',
      rank: { rubric: 'r', engines: [{ engine: 'judge', model: null }] },
      distinguish: { inputs: { engine: 'writer', model: null }, probe: 'p', maxInputs: 5, timeoutMs: 1000 },
      critique: { critics: [{ engine: 'critic' }] },
    } as never;
    // In table order: best-of-N's (its ranking reviewers, then its inputs engine), then critique's.
    assert.deepEqual(workflowReaderEngines(spec), [
      { engine: 'judge', here: true },
      { engine: 'writer', here: true },
      { engine: 'critic', here: true },
    ]);
    // A rank block on a group that does not select by it: its reviewers are named, but need not be here on a pool run.
    assert.deepEqual(workflowReaderEngines({ select: 'all', rank: { rubric: 'r', engines: [{ engine: 'judge', model: null }] } } as never), [
      { engine: 'judge', here: false },
    ]);
  });

  it("the budget, the scratch folders and the reader name no workflow's reader: each workflow says its own (ReaderStep, its scratch name)", () => {
    for (const f of ['spend.ts', 'containment.ts', path.join('steps', 'reader.ts')]) {
      const code = fs.readFileSync(path.resolve('extension', 'core', 'run', f), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      assert.doesNotMatch(code, /'critique|'rank|'distinguish|critique-|rank-|a critic|ranking reviewer|inputs engine/, `${f} names a workflow's reader`);
    }
  });

  it("the pool's dispatcher, payload and worker name no workflow: each workflow's part of a payload is its own (Workflow.pool)", () => {
    for (const f of ['dispatch.ts', 'payload.ts', 'worker.ts']) {
      const text = fs.readFileSync(path.resolve('extension', 'core', 'pool', f), 'utf8');
      const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      assert.doesNotMatch(code, /workflows\/(critique|phases|best-of-n|generate)|revis|Revision|\bred\b|redStarts|JobRed/, `${f} names a workflow`);
    }
    const parts = WORKFLOWS.filter((w) => w.pool).map((w) => w.name);
    assert.deepEqual(parts, ['phases', 'critique']);
  });

  it("the attempt's record names no workflow: what a workflow keeps on an attempt is its own entry of `workflows`", () => {
    const text = fs.readFileSync(path.resolve('extension', 'core', 'run', 'attempt-record.ts'), 'utf8');
    const record = /export interface AttemptRecord \{[\s\S]*?\n\}/.exec(text)?.[0] ?? '';
    assert.ok(record.includes('workflows?: WorkflowRecords'), 'the record has its workflows slot');
    assert.doesNotMatch(record.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ''), /\bred\b|critiqu|revision|phases/, 'AttemptRecord names a workflow field');
    assert.doesNotMatch(text, /workflows\/(critique|phases|best-of-n|generate)|RedRecord|CritiqueRecord/, 'attempt-record.ts names a workflow');
  });

  it('registers best-of-N, and the runner, the task graph, the run setup, the attempt loop, the control handler and the teardown reach it only through the table', () => {
    assert.ok(WORKFLOWS.some((w) => w.name === 'best-of-N'));
    const files = ['runner.ts', 'task-graph.ts', 'attempt-loop.ts', 'control-handler.ts', 'teardown.ts', 'live-run.ts', path.join('steps', 'context.ts')];
    for (const f of files) {
      const text = fs.readFileSync(path.resolve('extension', 'core', 'run', f), 'utf8');
      // live-run.ts copies the task's compiled place (group, candidate, select, workflow) into its state for the views:
      // a projection of the manifest, not a decision; any other `spec.select` or `spec.candidate` is one.
      const code =
        f === 'live-run.ts' ? text.replace(/\.\.\.\(spec\.(group|candidate|select|workflow) !== undefined \? \{ \1: spec\.\1 \} : \{\}\),/g, '') : text;
      assert.doesNotMatch(
        code,
        /spec\.select|spec\.candidate|GroupHost|BestOfN|workflows\/best-of-n|groups\.(busy|idle|gate|decide)/,
        `${f} names the best-of-N workflow`,
      );
    }
  });
});

/** A fake host: a scheduler whose idle() counts its calls. */
function hostOf(): { host: WorkflowHost; idles: () => number } {
  let idles = 0;
  const graph = { scheduler: { idle: async () => void idles++ } };
  return { host: { run: {}, graph } as unknown as WorkflowHost, idles: () => idles };
}

const fakeTask = (key: string) => ({ spec: { key, after: [] }, state: { key, status: 'queued' } }) as unknown as Parameters<RunWorkflows['release']>[0];

describe("RunWorkflows: every workflow's part of one run, asked as one", () => {
  it('opens each workflow once per run; the first answer in table order releases a task; no answer leaves it to the graph', () => {
    const opened: string[] = [];
    const mine = fakeTask('mine');
    const acted: string[] = [];
    const a: Workflow = { name: 'a', open: () => (opened.push('a'), { release: (t) => (t === mine ? () => void acted.push('a') : undefined) }) };
    const b: Workflow = { name: 'b', open: () => (opened.push('b'), { release: () => 'wait' }) };
    const w = new RunWorkflows(hostOf().host, [a, b]);
    assert.deepEqual(opened, ['a', 'b']);
    const act = w.release(mine);
    assert.equal(typeof act, 'function');
    (act as () => void)();
    assert.deepEqual(acted, ['a']);
    assert.equal(w.release(fakeTask('other')), 'wait', 'a does not take it, b keeps it waiting');
    assert.equal(new RunWorkflows(hostOf().host, [{ name: 'none' }]).release(mine), undefined);
  });

  it('a refusal of a rerun comes from the first workflow that refuses; stop, keepWaiting, waitsAgainFor and passNotNeeded ask every one', () => {
    const stopped: string[] = [];
    const a: Workflow = { name: 'a', refuseRerun: () => null, open: () => ({ onStop: (_t, r) => void stopped.push(`a ${r}`), keepWaiting: () => false }) };
    const b: Workflow = {
      name: 'b',
      refuseRerun: (t) => `b refuses ${t.key}`,
      open: () => ({
        onStop: (_t, r) => void stopped.push(`b ${r}`),
        keepWaiting: () => true,
        waitsAgainFor: (_t, k) => k === 'x',
        passNotNeeded: () => true,
      }),
    };
    const w = new RunWorkflows(hostOf().host, [a, b]);
    const t = fakeTask('t');
    assert.equal(w.refuseRerun(t), 'b refuses t');
    assert.equal(new RunWorkflows(hostOf().host, [a]).refuseRerun(t), null);
    w.onStop(t, 'stopped by me');
    assert.deepEqual(stopped, ['a stopped by me', 'b stopped by me']);
    assert.equal(w.keepWaiting(t), true);
    assert.deepEqual([w.waitsAgainFor(t, 'x'), w.waitsAgainFor(t, 'y')], [true, false]);
    assert.equal(w.passNotNeeded(t), true);
    assert.equal(new RunWorkflows(hostOf().host, [a]).passNotNeeded(t), false);
  });

  it("quiet: waits for the scheduler, then for each workflow's work under way and the scheduler again, until nothing is", async () => {
    let rounds = 2;
    const done: string[] = [];
    const a: Workflow = {
      name: 'a',
      open: () => ({
        idle: () =>
          rounds > 0
            ? new Promise<void>((r) =>
                setTimeout(() => {
                  rounds--;
                  done.push(`round ${2 - rounds}`);
                  r();
                }, 5),
              )
            : null,
      }),
    };
    const h = hostOf();
    await new RunWorkflows(h.host, [a, { name: 'b', open: () => ({}) }]).quiet();
    assert.deepEqual(done, ['round 1', 'round 2']);
    assert.equal(h.idles(), 3, 'the scheduler once first and once after each round of work');
  });
});
