/** Arithmetic on reported usage where a count the CLI did not report is null (unknown), never 0. */

/**
 * Adds one reported count to a running total. A null count leaves the total as it was; the first known count
 * turns a null total into a number. So a run whose CLI never reported a field keeps it null.
 */
export function addCount(total: number | null, count: number | null): number | null {
  if (count === null) return total;
  return (total ?? 0) + count;
}

/**
 * Converts a cost in USD (a float as CLIs print it) to integer micro-USD (1 USD = 1,000,000 micro-USD); null when the
 * result is not a safe integer >= 0 (a negative or absurd figure is no CLI's report: jsonl.ts countAt).
 */
export function usdToMicroUsd(usd: number): number | null {
  const micro = Math.round(usd * 1e6);
  return Number.isSafeInteger(micro) && micro >= 0 ? micro : null;
}
