/**
 * Node's timer limit, in one place. setTimeout and setInterval hold a delay in a 32-bit signed integer: a delay
 * larger than 2^31−1 ms (about 24.8 days), below 1 or not a number is taken as 1 ms (Node.js docs, timers,
 * "setTimeout(callback[, delay[, ...args]])"; a larger one also prints a TimeoutOverflowWarning). A time limit of
 * 2,200,000 s therefore fired after 1 ms: the worker was TIMEOUT at once. The manifest's schema bounds every time
 * limit by {@link MAX_TIMER_S}, and every timer whose delay comes from the user goes through {@link timerDelay}.
 */

/** The longest delay a Node timer keeps, ms: 2^31−1. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The longest time limit in whole seconds a timer can hold: floor((2^31−1) / 1000) = 2147483 s. The maximum of every
 * `*_s` duration in schemas/manifest.schema.json and of the CLI's duration flags (test/unit/numeric-ranges.unit.test.ts
 * holds the schema to it).
 */
export const MAX_TIMER_S = Math.floor(MAX_TIMER_MS / 1000);

/**
 * A delay, ms, that setTimeout/setInterval keep as given: `ms` clamped to [0, MAX_TIMER_MS] (Infinity becomes
 * MAX_TIMER_MS: a timer fires late rather than at once). Callers whose delay came from the user pass it through here.
 * @throws RangeError when `ms` is NaN (a delay that is not a number is refused, never a timer of 1 ms)
 */
export function timerDelay(ms: number): number {
  if (Number.isNaN(ms)) throw new RangeError('a timer delay must be a number of milliseconds, got NaN');
  return Math.min(MAX_TIMER_MS, Math.max(0, ms));
}
