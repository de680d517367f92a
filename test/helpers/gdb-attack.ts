import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { findBinary } from '../../engines/find-binary';

/**
 * Why this machine cannot stage the init-tracing attack (test/e2e/sandbox-init.e2e.test.ts, pool-orphans.e2e.test.ts:
 * gdb attaches to bubblewrap's init and calls prctl and setsid in it), or null when it can.
 * - `missing`: no gdb on PATH (CI installs it, so there this is an error);
 * - `machine`: Yama's ptrace_scope forbids attaching to a process that is not a child, or gdb cannot call a function in a
 *   traced process here (measured on a `sleep` this function starts: on some virtual machines gdb fails to write the
 *   CPU's extended register state, "Couldn't write extended state status: Bad address", and no `call` runs). Neither
 *   is something an install fixes, and the attack as written cannot run on such a machine.
 */
export function initTracingUnavailable(): { kind: 'missing' | 'machine'; reason: string } | null {
  if (!findBinary('gdb', process.env.PATH ?? '')) return { kind: 'missing', reason: 'no gdb on PATH' };
  try {
    const scope = Number(fs.readFileSync('/proc/sys/kernel/yama/ptrace_scope', 'utf8').trim());
    if (scope >= 1) return { kind: 'machine', reason: `Yama ptrace_scope=${scope} forbids tracing the sandbox's init` };
  } catch {
    // no Yama: ptrace is open to the same user
  }
  const target = spawn('sleep', ['60'], { stdio: 'ignore' });
  try {
    const r = spawnSync('gdb', ['-p', String(target.pid), '-batch', '-ex', 'call (int)getpid()'], { encoding: 'utf8', timeout: 30_000 });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    if (new RegExp(`^\\$1 = ${target.pid}$`, 'm').test(out)) return null;
    const why = out.split('\n').find((l) => /couldn't|cannot|error|denied/i.test(l)) ?? out.trim().split('\n').pop() ?? `exit ${r.status}`;
    return { kind: 'machine', reason: `gdb cannot call a function in a traced process on this machine (${why.trim()})` };
  } finally {
    target.kill('SIGKILL');
  }
}
