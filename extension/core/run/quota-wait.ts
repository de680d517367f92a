/**
 * Engines waiting for a quota reset (issue 13; seed AgentForeman's durable quota waiting): when an attempt ends
 * RATE_LIMITED and its engine named when its usage limit resets (engines/quota-reset.ts), no attempt on that engine
 * starts before then. The wait lives in state.json (`waits`, schemas/run-state.ts), so an orchestrator that takes the
 * run over after a crash or a resume (run/resume.ts) honours it. Tasks on other engines go on meanwhile.
 */
import type { EngineWait, RunState } from '../../../schemas/run-state';

/** The waits of one run, kept in its state object (the caller saves the state). */
export class EngineWaits {
  constructor(private readonly state: RunState) {}

  /** How long `engine` must still wait, ms (0: it may start now; an expired entry is dropped). */
  remaining(engine: string, now: number): number {
    const wait = this.state.waits?.[engine];
    if (!wait) return 0;
    if (wait.until > now) return wait.until - now;
    this.drop(engine);
    return 0;
  }

  /** Records that `engine` waits until `wait.until` (a later reset than one already recorded wins). True when it changed. */
  set(engine: string, wait: EngineWait): boolean {
    const before = this.state.waits?.[engine];
    if (before && before.until >= wait.until) return false;
    this.state.waits = { ...this.state.waits, [engine]: wait };
    return true;
  }

  /** The engines waiting at `now`, with their waits. */
  active(now: number): [string, EngineWait][] {
    return Object.entries(this.state.waits ?? {}).filter(([, w]) => w.until > now);
  }

  private drop(engine: string): void {
    if (!this.state.waits) return;
    const { [engine]: _gone, ...rest } = this.state.waits;
    if (Object.keys(rest).length) this.state.waits = rest;
    else delete this.state.waits;
  }
}

/** `14:05` today, else `2026-12-02 14:05` (local time): how a wake-up time is shown in the CLI and notes. */
export function wakeTime(until: number, now = Date.now()): string {
  const d = new Date(until);
  const p = (n: number) => String(n).padStart(2, '0');
  const hm = `${p(d.getHours())}:${p(d.getMinutes())}`;
  return d.toDateString() === new Date(now).toDateString() ? hm : `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${hm}`;
}

/** `waiting for codex until 14:05, claude until 2026-12-02 09:00` for the waits not yet over at `now`; '' when none. */
export function waitsLine(state: Pick<RunState, 'waits'>, now = Date.now()): string {
  const active = Object.entries(state.waits ?? {}).filter(([, w]) => w.until > now);
  return active.length ? `waiting for ${active.map(([engine, w]) => `${engine} until ${wakeTime(w.until, now)}`).join(', ')}` : '';
}
