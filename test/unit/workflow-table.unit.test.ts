import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ATTEMPT_STEPS, WORKFLOWS, withWorkflowSteps, type Workflow } from '../../extension/core/run/workflows';
import { DEFAULT_STEPS } from '../../extension/core/run/steps';
import type { Step } from '../../extension/core/run/steps/context';

const step = (name: string): Step => ({ name: name as Step['name'], when: () => true, run: async () => null });

describe('workflow plugins: one table (run/workflows/index.ts)', () => {
  it('puts each workflow step right after the default step it names: generate after red, before review', () => {
    const names = ATTEMPT_STEPS.map((s) => s.name);
    assert.deepEqual(names, ['prepare', 'inputs', 'work', 'seal', 'guard', 'check', 'red', 'generate', 'review', 'critique', 'deliver']);
    assert.equal(DEFAULT_STEPS.some((s) => s.name === 'generate'), false, 'the default steps do not name the generate workflow');
  });

  it('refuses a workflow step that follows a step the attempt does not have, naming the workflow and both steps', () => {
    const bad: Workflow = { name: 'nowhere', steps: [{ step: step('generate'), after: 'nosuch' as Step['name'] }] };
    assert.throws(() => withWorkflowSteps(DEFAULT_STEPS, [bad]), /workflow nowhere: its step generate follows step nosuch, which the attempt does not have/);
  });

  it('keeps table order for two workflows after the same step, and leaves its input untouched', () => {
    const base = [step('prepare'), step('check')];
    const a: Workflow = { name: 'a', steps: [{ step: step('review'), after: 'check' }] };
    const b: Workflow = { name: 'b', steps: [{ step: step('critique'), after: 'prepare' }] };
    assert.deepEqual(withWorkflowSteps(base, [a, b]).map((s) => s.name), ['prepare', 'critique', 'check', 'review']);
    assert.deepEqual(base.map((s) => s.name), ['prepare', 'check']);
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
    assert.ok(critique?.steps?.some((s) => s.step.name === 'critique' && s.after === 'review'));
    assert.equal(DEFAULT_STEPS.some((s) => s.name === 'critique'), false, 'the default steps do not name the critique workflow');
    for (const f of ['runner.ts', 'task-graph.ts', 'attempt.ts', 'attempt-loop.ts', 'resume.ts', path.join('steps', 'index.ts'), path.join('steps', 'context.ts')]) {
      const text = fs.readFileSync(path.resolve('extension', 'core', 'run', f), 'utf8');
      assert.doesNotMatch(text, /critique|critic\b|revising|revision/i, `${f} names the critique workflow`);
    }
  });

  it('registers phases: step red follows check through the table, and the check step and the default steps name no phases', () => {
    const phases = WORKFLOWS.find((w) => w.name === 'phases');
    assert.ok(phases?.steps?.some((s) => s.step.name === 'red' && s.after === 'check'));
    assert.equal(DEFAULT_STEPS.some((s) => s.name === 'red'), false, 'the default steps do not name the phases workflow');
    const spec = (red: boolean) => ({ spec: red ? { red: [{ file: 'a', implement: 'k--impl-1' }] } : {} }) as never;
    assert.equal(phases?.checkOnCopy?.(spec(true)), true);
    assert.equal(phases?.checkOnCopy?.(spec(false)), false);
    for (const f of ['runner.ts', 'task-graph.ts', 'attempt-loop.ts', path.join('steps', 'index.ts'), path.join('steps', 'check.ts'), path.join('steps', 'context.ts')]) {
      const text = fs.readFileSync(path.resolve('extension', 'core', 'run', f), 'utf8');
      assert.doesNotMatch(text, /spec\.red\b|workflows\/phases|redStep|phases/, `${f} names the phases workflow`);
    }
  });
});
