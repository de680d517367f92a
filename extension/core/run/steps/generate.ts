/**
 * Step `generate` (a planner, after its check passed; docs/workflows.md "Generated"): reads the planner's tasks file
 * as it was sealed, validates it (manifest/generated.ts) and, when no finding is an error, hands its tasks to the
 * runner (TaskRuntime.generated), which adds them to the run once the attempt is PASS. Any error FAILs the attempt
 * with every error's position in the file, so a retry sees them; nothing of the file joins the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gitFor } from '../../git/safe-git';
import { formatGeneratedFinding, GENERATED_MAX_BYTES, validateGenerated } from '../../manifest/generated';
import type { AttemptRecord } from '../attempt-record';
import type { AttemptContext, Step, TaskRuntime } from './context';

export const generateStep: Step = {
  name: 'generate',
  when: (rec, task) => rec.verdict === 'PASS' && task.spec.generate !== undefined,
  async run(ctx, task, rec) {
    const gen = task.spec.generate!;
    const file = path.join(task.state.dir, gen.file);
    task.generated = null;
    let text: string;
    try {
      text = await readSealed(ctx, task, rec, gen.file);
    } catch (e) {
      return { verdict: 'FAIL', reason: `${gen.file}: ${(e as Error).message}; no task joined the run` };
    }
    const result = await validateGenerated(text, file, {
      planner: task.spec,
      existingKeys: new Set(ctx.taskKeys?.() ?? ctx.opts.manifest.tasks.map((t) => t.key)),
      allowedEngines: new Set(ctx.binaries.keys()),
      lint: { engines: ctx.opts.engines, allowFullAccess: false },
      worktrees: ctx.opts.manifest.worktrees,
    });
    const lines = result.findings.map(formatGeneratedFinding);
    fs.writeFileSync(path.join(rec.dir, 'generate.log'), lines.length ? `${lines.join('\n')}\n` : 'no findings\n');
    const errors = result.findings.filter((f) => f.severity === 'error');
    if (!result.tasks || errors.length) {
      return { verdict: 'FAIL', reason: `the tasks in ${gen.file} were refused and none joined the run (${errors.length} error(s)): ${errors.map(formatGeneratedFinding).join('; ')}` };
    }
    for (const f of result.findings) ctx.emit({ type: 'task-note', key: task.spec.key, note: formatGeneratedFinding(f) });
    task.generated = result.tasks;
    return null;
  },
};

/**
 * The planner's file as the check judged it: in worktree mode from the sealed commit (a blob of a regular file, found
 * through the tree objects: no pathspec, no symlink followed), in plain mode from the task dir (a regular file, not a
 * symlink, inside the task dir). At most GENERATED_MAX_BYTES.
 * @throws Error saying why the file cannot be read (missing, a symlink, too big)
 */
async function readSealed(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, rel: string): Promise<string> {
  const tooBig = (n: number) => new Error(`the file is ${n} bytes; a generated tasks file may have at most ${GENERATED_MAX_BYTES}`);
  if (ctx.repo && rec.seal) {
    const git = gitFor(ctx.repo.root);
    const dir = path.posix.dirname(path.posix.normalize(rel));
    const name = path.posix.basename(rel);
    const treeish = dir === '.' ? `${rec.seal.sha}^{tree}` : `${rec.seal.sha}:${dir}`;
    const listing = await git.raw(['ls-tree', '-z', treeish]).catch(() => '');
    // `<mode> SP <type> SP <object> TAB <name>` per entry, NUL-terminated (git-ls-tree(1)).
    const entry = listing.split('\0').map((l) => /^(\d+) (\w+) ([0-9a-f]+)\t(.*)$/s.exec(l)).find((m) => m?.[4] === name);
    if (!entry) throw new Error('the file is not in the sealed commit');
    if (entry[1] !== '100644' && entry[1] !== '100755') throw new Error(`the file is not a regular file in the sealed commit (git mode ${entry[1]}${entry[1] === '120000' ? ', a symlink' : ''})`);
    const size = Number((await git.raw(['cat-file', '-s', entry[3] as string])).trim());
    if (size > GENERATED_MAX_BYTES) throw tooBig(size);
    return git.raw(['cat-file', 'blob', entry[3] as string]);
  }
  const file = path.join(task.state.dir, rel);
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!st) throw new Error('the file does not exist');
  if (!st.isFile()) throw new Error('the file is not a regular file (a symlink, a folder or a device)');
  const real = fs.realpathSync(file);
  if (!real.startsWith(fs.realpathSync(task.state.dir) + path.sep)) throw new Error('the file is reached through a symlink out of the task dir');
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    const opened = fs.fstatSync(fd);
    if (!opened.isFile()) throw new Error('the file is not a regular file');
    if (opened.size > GENERATED_MAX_BYTES) throw tooBig(opened.size);
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}
