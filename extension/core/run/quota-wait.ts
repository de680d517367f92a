/**
 * Engines waiting for a quota reset (docs/attempt.md "Settle"): when an
 * attempt ends RATE_LIMITED on its own and its engine's own structured error event names when its usage limit resets
 * (EngineSpec.quotaReset, engines/quota-reset.ts), no attempt on that engine starts before then. Text the worker
 * controls never starts one. The wait lives in state.json (`waits`, schemas/run-state.ts), so an orchestrator that
 * takes the run over after a crash or a resume (run/resume.ts) honours it. Tasks on other engines go on meanwhile.
 *
 * Bounded: a reset further away than the cap (the user config's `quota.max_wait_h`, default 6 h) is believed only when
 * the engine says it again. The wait is shortened to the cap; when the cap is over, one attempt on the engine runs (the
 * probe; the engine's other tasks are held until it ends). A probe whose engine reports the quota again makes the
 * engine wait until the reset it names (confirmed); a probe that does not ends the wait. `verdict unwait RUN ENGINE`
 * (the control channel's `unwait`) clears a wait at once.
 */
import type { EngineWait, RunState } from '../../../schemas/run-state';
import type { QuotaEvent } from '../../../engines/quota-reset';
import { MAX_QUOTA_WAIT_MS } from '../../../engines/quota-reset';

/** The default cap on a wait no probe confirmed, ms: 6 hours. */
export const DEFAULT_MAX_QUOTA_WAIT_MS = 6 * 3600_000;

/** The largest cap the config may set, h: a reset further away is not believed at all (MAX_QUOTA_WAIT_MS, 8 days). */
export const MAX_QUOTA_WAIT_H = MAX_QUOTA_WAIT_MS / 3600_000;

/**
 * What the scheduler does with a job whose next attempt runs on an engine: `go` (start it; `probe` when it is the
 * attempt that tests a wait shortened to the cap), `wait` `ms` more, or `hold` (the engine's probe is running: wait for
 * its end, which wakes the job).
 */
export type WaitGate = { kind: 'go'; probe: boolean } | { kind: 'wait'; ms: number } | { kind: 'hold' };

/** What an attempt's end did to its engine's wait (EngineWaits.settle). */
export interface WaitChange {
  /** The wait set or moved by this attempt's quota event, or null when it set none. */
  set: EngineWait | null;
  /** When this attempt was the probe and reported no quota again: the wait that ended with it. */
  ended: EngineWait | null;
  /** The attempt was its engine's probe: the jobs held for it may go on (they meet the new wait, if any). */
  probeSettled: boolean;
}

/** The waits of one run, kept in its state object (the caller saves the state). `maxWaitMs`: the cap, ms. */
export class EngineWaits {
  /** engine → the task whose attempt probes its wait now, and the wait it probes (its `since`). */
  private readonly probes = new Map<string, { task: string; waitSince: number }>();

  constructor(
    private readonly state: RunState,
    readonly maxWaitMs: number = DEFAULT_MAX_QUOTA_WAIT_MS,
  ) {
    // A probe an earlier orchestrator started never settles here: the next attempt on that engine probes again.
    for (const wait of Object.values(state.waits ?? {})) delete wait.probe;
  }

  /**
   * Whether `task`'s next attempt on `engine` may start at `now` (see WaitGate). A wait that is over and was not
   * shortened is dropped; one that was shortened to the cap makes the first job to ask its probe (recorded in the
   * wait: `probe`) and holds the others until the probe ends.
   */
  /**
   * Why `engine` cannot take an attempt of `task` at `now` because of its quota wait (waiting until a time, or its probe
   * held by another task), or null; unlike gate() it claims nothing (routing asks it of every candidate).
   */
  holdReason(engine: string, now: number, task: string): string | null {
    const wait = this.state.waits?.[engine];
    if (!wait) return null;
    if (wait.until > now) return `engine ${engine} waits for its quota until ${new Date(wait.until).toISOString()}`;
    const probe = this.probes.get(engine);
    return wait.capped && probe && probe.task !== task ? `engine ${engine} waits for the probe of its quota` : null;
  }

  gate(engine: string, now: number, task: string): WaitGate {
    const wait = this.state.waits?.[engine];
    if (!wait) return { kind: 'go', probe: false };
    if (wait.until > now) return { kind: 'wait', ms: wait.until - now };
    if (!wait.capped) {
      this.drop(engine);
      return { kind: 'go', probe: false };
    }
    const probe = this.probes.get(engine);
    if (probe && probe.task !== task) return { kind: 'hold' };
    this.probes.set(engine, { task, waitSince: wait.since });
    wait.probe = { task, since: now };
    return { kind: 'go', probe: true };
  }

  /**
   * After an attempt of `task` (number `attempt`) on `engine` ended at `now`: `quota` is the engine's structured quota
   * event (null when it reported none), `informative` false when the attempt says nothing about the engine (it was
   * cancelled or interrupted: a probe's turn passes to the next attempt). A quota event sets a wait — until the reset,
   * or until `now` + the cap when the reset is further and this attempt was no probe (`capped`); from the probe, the
   * whole reset (`confirmed`). The later of two waits wins, except that a probe's answer replaces the wait it probed.
   * A probe that reports no quota ends the wait it probed.
   */
  settle(engine: string, task: string, attempt: number, quota: QuotaEvent | null, now: number, informative = true): WaitChange {
    const probe = this.probes.get(engine);
    const wasProbe = probe?.task === task;
    if (wasProbe) this.probes.delete(engine);
    const probed = wasProbe ? this.state.waits?.[engine] : undefined;
    const stillProbed = probed !== undefined && probed.since === probe?.waitSince ? probed : undefined;
    if (stillProbed) delete stillProbed.probe;
    if (!quota) {
      if (stillProbed && informative) {
        this.drop(engine);
        return { set: null, ended: stillProbed, probeSettled: true };
      }
      return { set: null, ended: null, probeSettled: wasProbe };
    }
    const wait = this.waitFor(quota, task, attempt, now, wasProbe);
    const before = this.state.waits?.[engine];
    if (before && before !== stillProbed && before.until >= wait.until) return { set: null, ended: null, probeSettled: wasProbe };
    this.state.waits = { ...this.state.waits, [engine]: wait };
    return { set: wait, ended: null, probeSettled: wasProbe };
  }

  /** The probe job of `task` on `engine` ended without an attempt (budget, baseline, stop): the next job probes. True when it was the probe. */
  abandonProbe(engine: string, task: string): boolean {
    if (this.probes.get(engine)?.task !== task) return false;
    this.probes.delete(engine);
    const wait = this.state.waits?.[engine];
    if (wait) delete wait.probe;
    return true;
  }

  /** Clears `engine`'s wait whatever it is (`verdict unwait`): the wait it was, or null when it had none. */
  clear(engine: string): EngineWait | null {
    const wait = this.state.waits?.[engine] ?? null;
    this.probes.delete(engine);
    if (wait) this.drop(engine);
    return wait;
  }

  /** The engines waiting at `now`, with their waits. */
  active(now: number): [string, EngineWait][] {
    return Object.entries(this.state.waits ?? {}).filter(([, w]) => w.until > now);
  }

  private waitFor(quota: QuotaEvent, task: string, attempt: number, now: number, probe: boolean): EngineWait {
    const base = { reason: quota.text, source: quota.source, reset: quota.until, since: now, task, attempt };
    const cap = now + this.maxWaitMs;
    if (quota.until <= cap)
      return { ...base, until: quota.until, why: `the engine's own reset${probe ? ` (reported again by the probe, ${task} attempt ${attempt})` : ''}` };
    if (probe)
      return {
        ...base,
        until: quota.until,
        confirmed: true,
        why: `the engine's own reset, past the ${hours(this.maxWaitMs)} cap: confirmed by ${task} attempt ${attempt}, the probe started after the cap, which reported it again`,
      };
    return {
      ...base,
      until: cap,
      capped: true,
      why: `the engine's reset (${wakeTime(quota.until, now)}) is past the ${hours(this.maxWaitMs)} cap (quota.max_wait_h): shortened to the cap; then one attempt probes the engine, and only if it reports the quota again does the engine wait until the reset`,
    };
  }

  private drop(engine: string): void {
    if (!this.state.waits) return;
    const { [engine]: _gone, ...rest } = this.state.waits;
    if (Object.keys(rest).length) this.state.waits = rest;
    else delete this.state.waits;
  }
}

/** `6 h`, `0.5 h`, `0 h`: a cap in ms as the config gives it. */
function hours(ms: number): string {
  return `${Number((ms / 3600_000).toFixed(3))} h`;
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

/**
 * One line per wait in the state (`verdict runs RUN`): the engine, until when (or that its probe runs, or that the wait
 * is over), who set it (task, attempt, the engine's event and its own words, quoted as data), why until is what it is,
 * and how to clear it. Older records without `source`/`why` say less. Words are the engine's: the caller makes them
 * printable.
 */
export function waitLines(state: Pick<RunState, 'waits' | 'runId'>, now = Date.now()): string[] {
  return Object.entries(state.waits ?? {}).map(([engine, w]) => {
    const when =
      w.until > now
        ? `waits until ${wakeTime(w.until, now)}`
        : w.probe
          ? `is being probed by ${w.probe.task} (its wait was shortened to the cap, ${wakeTime(w.until, now)})`
          : `waited until ${wakeTime(w.until, now)}`;
    const from = `set by ${w.task} attempt ${w.attempt}${w.source ? ` from ${w.source}` : ''} at ${wakeTime(w.since, now)}`;
    return `${engine} ${when} — ${from}: "${w.reason}"${w.why ? `; ${w.why}` : ''}. Clear it: verdict unwait ${state.runId} ${engine}`;
  });
}
