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
   * log_max_mb cut its model calls out of the log, and with them its spend. The reading after stops where the log's
   * bytes read before now end (`done`: SuperviseOptions.onCompact), so what the step wrote meanwhile is not taken for
   * what the cut kept (it was: a model call reported just after the cut was subtracted from the cut part's usage).
   */
  compaction: { before(): void; after(done: { seen: number; end: number } | null): void };
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
 * @param log `read`: the worker's raw log (stdout and stderr) as the supervisor wrote it so far, or only its first
 *   `upTo` bytes; `size`: its size in bytes; neither throws
 */
export function usageMeter(
  engine: Pick<EngineSpec, 'streamUsage'>,
  log: { read(upTo?: number): string; size(): number },
  report: (usage: UsageReport) => void,
): UsageMeter {
  const stream = engine.streamUsage;
  if (!stream)
    return { onOutput: () => undefined, stop: () => undefined, compaction: { before: () => undefined, after: () => undefined }, cutPart: () => null };
  /** What the parts cut out of the log reported, count by count. */
  const cutPart: Partial<Record<UsageCount, number>> = {};
  let cut = false;
  let beforeCut: { usage: UsageReport; bytes: number } | null = null;
  const reading = (upTo?: number): UsageReport => plus(stream(log.read(upTo)), cutPart);
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
      // Output after a quiet spell is read at once; more output within the interval is read when it is up. Not while
      // the log is being compacted (the supervisor hands the kept tail on as output then): half moved down, it holds
      // the tail twice, and its calls would count twice; the reading after the compaction reports.
      if (stopped || timer !== null || beforeCut !== null) return;
      const wait = lastRead + intervalMs - performance.now();
      if (wait <= 0) read();
      else timer = setTimeout(read, wait);
    },
    compaction: {
      before() {
        // Exactly the bytes there now: what is appended while it reads is not in `bytes`.
        const bytes = log.size();
        beforeCut = { usage: reading(bytes), bytes };
      },
      after(done) {
        if (!beforeCut) return;
        const was = beforeCut;
        beforeCut = null;
        if (!done) return;
        // The log as it is now, less what was written after `before` read it (kept at the end of the tail, or after it).
        const after = reading(done.end - Math.max(0, done.seen - was.bytes));
        // The cut part's usage: what the log held before less what it holds now (a count never goes down).
        for (const k of COUNTS) {
          const gone = (was.usage[k] ?? 0) - (after[k] ?? 0);
          if (gone > 0) cutPart[k] = (cutPart[k] ?? 0) + gone;
        }
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
