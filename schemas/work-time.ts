// A run's elapsed time as work time: the time during which some attempt of it was running. Pure; no Node, no DOM.

/** What work time needs of an attempt (AttemptState and its page view both fit). Times epoch ms. */
export interface TimedAttempt {
  startedAt: number;
  endedAt: number | null;
}

/**
 * The length of the union of the attempts' intervals, ms: the time at least one attempt of the run was running. A run
 * resumed or rerun hours later counts its two working spans, not the idle hours between (a plain `endedAt − startedAt`
 * did). An attempt still running ends at `now` (for a run whose orchestrator died, pass its last heartbeat). Attempts
 * that end before they start (a clock step) count as nothing.
 */
export function workTimeMs(tasks: readonly { attempts: readonly TimedAttempt[] }[], now: number): number {
  const spans = tasks
    .flatMap((t) => t.attempts.map((a): [number, number] => [a.startedAt, a.endedAt ?? Math.max(now, a.startedAt)]))
    .filter(([from, to]) => to > from)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let open: [number, number] | null = null;
  for (const [from, to] of spans) {
    if (open && from <= open[1]) open[1] = Math.max(open[1], to);
    else {
      if (open) total += open[1] - open[0];
      open = [from, to];
    }
  }
  return open ? total + open[1] - open[0] : total;
}
