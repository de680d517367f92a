// Waiting in the integration tests: poll until a value shows, or fail naming what never came.

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls `fn` every 200 ms until it gives something other than undefined or false, and returns that.
 * @throws Error "timed out waiting for <what>" after `timeoutMs` (ms)
 */
export async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 60000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}
