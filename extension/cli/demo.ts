import fs from 'node:fs';
import path from 'node:path';
import { gitFor } from '../core/git/safe-git';
import { resolveHome } from '../core/config/home';
import type { Io } from './io';
import { packageRoot } from './package-root';
import { runCommand, type RunFlags } from './run-command';
import { probeSandbox } from '../core/process/sandbox';

/**
 * `verdict demo`: makes a small git repository under `<home>/demo/repo` (once; later runs reuse it) and runs
 * examples/demo/demo.swarm.json on it in worktree mode with the script engine — no model, account or key.
 * Sandboxed where bubblewrap runs; elsewhere it says so in one line and runs its own bundled workers without one.
 * One task's worker lies on purpose, so its FAIL is the expected outcome: exit 0 when the run ends with exactly
 * the verdicts the demo is built to show, 1 otherwise, 2 on bad input.
 */
export async function demoCommand(flags: RunFlags, io: Io): Promise<number> {
  const home = resolveHome(flags.home);
  const repo = path.join(home, 'demo', 'repo');
  await ensureDemoRepo(repo);
  const manifest = path.join(packageRoot(), 'examples', 'demo', 'demo.swarm.json');
  io.out(`verdict demo: ${manifest}\n  repository: ${repo}\n`);
  // The demo's workers are its own bundled scripts, so where no sandbox can run it still shows what Verdict does —
  // saying so in one line. Your own runs refuse to start there until bubblewrap works or you pass --no-sandbox.
  const probe = await probeSandbox();
  let noSandbox = flags.noSandbox;
  if (probe.kind === 'none' && !noSandbox) {
    io.err(
      `demo: no sandbox here (${probe.reason}); the demo's own scripted workers run without one. Your runs will refuse to start until bubblewrap works or you pass --no-sandbox (see verdict doctor).`,
    );
    noSandbox = true;
  }
  const { code, summary } = await runCommand(manifest, { ...flags, home, noSandbox }, io, (m) => {
    m.repo = repo;
  });
  if (!summary) return code;
  const expected: Record<string, string> = { fizzbuzz: 'PASS', greeting: 'PASS', 'port-echo': 'PASS', 'lying-worker': 'FAIL' };
  const asExpected = summary.tasks.every((t) => expected[t.key] === t.verdict);
  io.out('');
  io.out(
    asExpected
      ? 'demo finished as designed: three workers proved their work; "lying-worker" said it was done and its check proved it was not.'
      : 'demo did NOT end as designed; see the table above.',
  );
  io.out(`records: ${path.join(home, 'runs', summary.runId)}   eval log: ${path.join(home, 'runs.jsonl')}`);
  return asExpected ? 0 : 1;
}

async function ensureDemoRepo(repo: string): Promise<void> {
  if (fs.existsSync(path.join(repo, '.git'))) return;
  fs.mkdirSync(repo, { recursive: true });
  fs.writeFileSync(path.join(repo, 'README.md'), '# Verdict demo repository\n\nTask branches `verdict/<run>/<task>` hold what each worker proved.\n');
  const git = gitFor(repo, { trusted: true });
  await git.init();
  await git.add('README.md');
  await git.raw(['-c', 'user.name=Verdict demo', '-c', 'user.email=demo@verdict.invalid', 'commit', '--quiet', '-m', 'demo: initial commit']);
}
