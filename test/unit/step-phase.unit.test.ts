import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ATTEMPT_STEPS } from '../../extension/core/run/workflows';

describe("a task's phase derives from the step it is in", () => {
  it('along the steps in their order the phase never goes back (preparing, then running, then checking)', () => {
    const rank = { preparing: 0, running: 1, checking: 2 } as const;
    const phases = ATTEMPT_STEPS.map((s) => s.phase);
    assert.deepEqual(phases.slice(0, 3), ['preparing', 'preparing', 'running'], 'prepare and inputs prepare; the worker runs in work');
    for (let i = 1; i < phases.length; i++) assert.ok(rank[phases[i]!] >= rank[phases[i - 1]!], `${ATTEMPT_STEPS[i]!.name} goes back to ${phases[i]}`);
    assert.equal(ATTEMPT_STEPS.find((s) => s.name === 'check')?.phase, 'checking');
  });

  it("no step writes the task's status or the attempt's phase itself: the attempt loop does, from the step's phase (Step.phase)", () => {
    // The default steps, and the workflow plugins' (their steps and hooks live in run/workflows/<name>/).
    const files = ['steps', 'workflows'].flatMap((d) =>
      fs
        .readdirSync(path.resolve('extension', 'core', 'run', d), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .map((f) => path.join(d, f)),
    );
    assert.ok(files.includes(path.join('workflows', 'generate', 'step.ts')), "a workflow's step is scanned");
    const found = files
      .flatMap((f) =>
        fs
          .readFileSync(path.resolve('extension', 'core', 'run', f), 'utf8')
          .split('\n')
          .map((line, i) => ({ f, i, line })),
      )
      .filter(({ line }) => /state\.status\s*=[^=]|rec\.phase\s*=[^=]/.test(line))
      .map(({ f, i, line }) => `${f}:${i + 1}: ${line.trim()}`);
    assert.deepEqual(found, []);
  });
});
