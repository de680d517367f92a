import type { EngineSpec, UsageReport } from '../../../engines/types';

/** Shortest time between two readings of a growing worker log, ms. */
const MIN_INTERVAL_MS = 100;
/** A reading may take at most this share of the time between readings (a large log is read less often). */
const MAX_BUSY_SHARE = 0.1;

/** Reads a running worker's usage from its log as it grows; see usageMeter. */
export interface UsageMeter {
  /** The worker printed something (the supervisor's onOutput): a reading follows within the interval. */
  onOutput(): void;
  /** Stops reading (the step ended; its final usage is parseOutput's). */
  stop(): void;
}

/**
 * Follows a running worker's usage for the budget: on new output (at once after a quiet spell), at most once every MIN_INTERVAL_MS (longer when a
 * reading of a large log takes long: never more than MAX_BUSY_SHARE of the time), the whole log (`readLog`) is read
 * with the engine's streamUsage and `report` gets the usage so far. An engine
 * without streamUsage (its usage comes only at its end) gets a meter that does nothing. `report` must not throw;
 * nothing here does.
 * @param readLog reads the worker's raw log (stdout and stderr) as the supervisor wrote it so far; never throws
 */
export function usageMeter(engine: Pick<EngineSpec, 'streamUsage'>, readLog: () => string, report: (usage: UsageReport) => void): UsageMeter {
  const stream = engine.streamUsage;
  if (!stream) return { onOutput: () => undefined, stop: () => undefined };
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  let intervalMs = MIN_INTERVAL_MS;
  let lastRead = -Infinity;
  const read = () => {
    timer = null;
    if (stopped) return;
    const started = performance.now();
    lastRead = started;
    const usage = stream(readLog());
    intervalMs = Math.max(MIN_INTERVAL_MS, (performance.now() - started) / MAX_BUSY_SHARE);
    report(usage);
  };
  return {
    onOutput() {
      // Output after a quiet spell is read at once; more output within the interval is read when it is up.
      if (stopped || timer !== null) return;
      const wait = lastRead + intervalMs - performance.now();
      if (wait <= 0) read();
      else timer = setTimeout(read, wait);
    },
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
