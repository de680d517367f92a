/**
 * The one-line description of the containment a run gets on this machine, shown by `verdict doctor` and in the
 * extension's status-bar tooltip (the same words in both places).
 */
import type { SandboxMode, SandboxProbe } from './sandbox';

/**
 * `sandbox: …` for a probe and the mode the user chose (default `auto`).
 * bwrap: its version, binary and what it confines; none: the reason and what the user can do about it.
 */
export function containmentLine(probe: SandboxProbe, mode: SandboxMode = 'auto'): string {
  if (mode === 'off') {
    const here = probe.kind === 'bwrap' ? `bwrap ${probe.version} is available (${probe.binary})` : `none here either: ${probe.reason}`;
    return `sandbox: off (--no-sandbox, "sandbox": false or verdict.sandbox) — every step runs unsandboxed; ${here}`;
  }
  if (probe.kind === 'bwrap') {
    return `sandbox: bwrap ${probe.version} (${probe.binary}): every step runs in its own PID namespace with no capability, filesystem read-only except the task dir, a scratch dir and the engine's state dirs`;
  }
  return `sandbox: none — ${probe.reason}; runs refuse to start unless --no-sandbox`;
}
