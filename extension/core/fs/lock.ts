import lockfile from 'proper-lockfile';

const chains = new Map<string, Promise<unknown>>();

/**
 * Runs `fn` while holding an exclusive lock on `lockPath`: first a promise chain per path inside this process,
 * then proper-lockfile (a `<lockPath>.lock` directory, stale after 30 s without refresh) across processes.
 * The file at `lockPath` need not exist. Errors from `fn` propagate after the lock is released.
 * @throws Error when the cross-process lock cannot be taken within about a minute
 */
export async function withLock<T>(lockPath: string, fn: () => Promise<T>): Promise<T> {
  const previous = chains.get(lockPath) ?? Promise.resolve();
  const run = previous
    .catch(() => undefined)
    .then(async () => {
      const release = await lockfile.lock(lockPath, {
        realpath: false,
        stale: 30_000,
        retries: { retries: 600, minTimeout: 20, maxTimeout: 200, factor: 1.2 },
      });
      try {
        return await fn();
      } finally {
        await release();
      }
    });
  chains.set(lockPath, run);
  try {
    return await run;
  } finally {
    if (chains.get(lockPath) === run) chains.delete(lockPath);
  }
}
