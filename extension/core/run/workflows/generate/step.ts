/**
 * Step `generate` (a planner, after its check passed; docs/workflows.md "Generated"): reads the planner's tasks file
 * as it was sealed, validates it (run/workflows/generate/file.ts) and, when no finding is an error, hands its tasks to the
 * workflow (plannedTasks), which adds them to the run once the planner is PASS (join.ts). Any error FAILs the attempt
 * with every error's position in the file, so a retry sees them; nothing of the file joins the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { formatGeneratedFinding, GENERATED_MAX_BYTES, validateGenerated } from './file';
import { readSealedFile } from '../../sealed-file';
import type { Step, TaskRuntime } from '../../steps/context';

/**
 * A planner's validated tasks (raw, as a manifest holds them), set by step `generate` on the planner's last attempt
 * and taken (deleted) when they join the run; a planner not in it has none waiting.
 */
export const plannedTasks = new WeakMap<TaskRuntime, Record<string, unknown>[]>();

/** Step `generate`: runs for a planner (`generate` in its spec) whose attempt has passed so far. */
export const generateStep: Step = {
  name: 'generate',
  phase: 'checking',
  when: (rec, task) => rec.verdict === 'PASS' && task.spec.generate !== undefined,
  async run(ctx, task, rec) {
    const gen = task.spec.generate!;
    const file = path.join(task.state.dir, gen.file);
    plannedTasks.delete(task);
    let text: string;
    try {
      text = await readSealedFile(
        ctx.repo?.root ?? null,
        rec.seal,
        task.state.dir,
        gen.file,
        GENERATED_MAX_BYTES,
        `a generated tasks file may have at most ${GENERATED_MAX_BYTES}`,
      );
    } catch (e) {
      return { verdict: 'FAIL', reason: `${gen.file}: ${(e as Error).message}; no task joined the run` };
    }
    const result = await validateGenerated(text, file, {
      planner: task.spec,
      existingKeys: new Set(ctx.taskKeys?.() ?? ctx.opts.manifest.tasks.map((t) => t.key)),
      allowedEngines: new Set(ctx.binaries.keys()),
      lint: { engines: ctx.opts.engines, allowFullAccess: false, sections: ctx.sections },
      worktrees: ctx.opts.manifest.worktrees,
    });
    const lines = result.findings.map(formatGeneratedFinding);
    fs.writeFileSync(path.join(rec.dir, 'generate.log'), lines.length ? `${lines.join('\n')}\n` : 'no findings\n');
    const errors = result.findings.filter((f) => f.severity === 'error');
    if (!result.tasks || errors.length) {
      return {
        verdict: 'FAIL',
        reason: `the tasks in ${gen.file} were refused and none joined the run (${errors.length} error(s)): ${errors.map(formatGeneratedFinding).join('; ')}`,
      };
    }
    for (const f of result.findings) ctx.emit({ type: 'task-note', key: task.spec.key, note: formatGeneratedFinding(f) });
    plannedTasks.set(task, result.tasks);
    return null;
  },
};
