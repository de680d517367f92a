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
  /**
   * For the supervisor's onCompact: reads the whole log before its middle is cut and again after, so the usage the
   * cut part reported keeps counting (added to every later reading). Without it, a worker whose output passes
   * log_max_mb cut its model calls out of the log, and with them its spend.
   */
  compaction: { before(): void; after(): void };
  /**
   * What the parts cut out of the log reported (counts only), or null when nothing was cut: added to the usage read
   * from the log as the step left it (withCutPart), the attempt's usage.
   */
  cutPart(): Partial<Pick<UsageReport, UsageCount>> | null;
}

/** The usage counts a reading sums (tokens and reported cost); the rest of a report is taken as read. */
const COUNTS = ['tokensIn', 'tokensOut', 'tokensCached', 'tokensCacheWrite', 'tokensReasoning', 'costMicroUsd'] as const;
type UsageCount = (typeof COUNTS)[number];

/** `a` with each count of `b` added (a count unknown in both stays unknown). Pure. */
function plus(a: UsageReport, b: Partial<Pick<UsageReport, UsageCount>>): UsageReport {
  const out = { ...a };
  for (const k of COUNTS) {
    const add = b[k] ?? null;
    if (add !== null) out[k] = (out[k] ?? 0) + add;
  }
  return out;
}

/**
 * The usage read from a log as the step left it with what its cut parts reported added (UsageMeter.cutPart). For an
 * engine whose final event carries the session's totals (Claude Code's result) a cut before it counts the cut part
 * twice: an upper bound, never a lower one. Pure.
 */
export function withCutPart(parsed: UsageReport, cut: Partial<Pick<UsageReport, UsageCount>> | null): UsageReport {
  return cut ? plus(parsed, cut) : parsed;
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
  if (!stream)
    return { onOutput: () => undefined, stop: () => undefined, compaction: { before: () => undefined, after: () => undefined }, cutPart: () => null };
  /** What the parts cut out of the log reported, count by count. */
  const cutPart: Partial<Record<UsageCount, number>> = {};
  let cut = false;
  let beforeCut: UsageReport | null = null;
  const reading = (): UsageReport => plus(stream(readLog()), cutPart);
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  let intervalMs = MIN_INTERVAL_MS;
  let lastRead = -Infinity;
  const read = () => {
    timer = null;
    if (stopped) return;
    const started = performance.now();
    lastRead = started;
    const usage = reading();
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
    compaction: {
      before() {
        beforeCut = reading();
      },
      after() {
        if (!beforeCut) return;
        const after = reading();
        // The cut part's usage: what the log held before less what it holds now (a count never goes down).
        for (const k of COUNTS) {
          const gone = (beforeCut[k] ?? 0) - (after[k] ?? 0);
          if (gone > 0) cutPart[k] = (cutPart[k] ?? 0) + gone;
        }
        beforeCut = null;
        cut = true;
        if (!stopped) report(reading());
      },
    },
    cutPart: () => (cut ? { ...cutPart } : null),
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
