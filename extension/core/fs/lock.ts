import lockfile from 'proper-lockfile';

const chains = new Map<string, Promise<unknown>>();

/**
 * Runs `fn` while holding an exclusive lock on `lockPath`: first a promise chain per path inside this process,
 * then proper-lockfile (a `<lockPath>.lock` directory, stale after 30 s without refresh) across processes.
 * The file at `lockPath` need not exist. Errors from `fn` propagate after the lock is released. A batch of
 * {@link withSharedLock} callers open on the same path takes no new members once this is called, so an exclusive
 * caller waits for the batch that is running and never for ones that come after it.
 * @throws Error when the cross-process lock cannot be taken within about a minute
 */
export async function withLock<T>(lockPath: string, fn: () => Promise<T>): Promise<T> {
  closeBatch(lockPath);
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

/** Callers of {@link withSharedLock} holding (or about to hold) one lock together. */
interface Batch {
  /** Members that joined and have not ended. */
  members: number;
  /** Whether a new caller may still join. */
  open: boolean;
  /** Settles once the lock is held (rejects when it could not be taken). */
  held: Promise<void>;
  /** Lets the lock go: called when the last member ended. */
  end: () => void;
  /** Settles once the lock was let go (or could not be taken). */
  released: Promise<unknown>;
}

const batches = new Map<string, Batch>();

function closeBatch(lockPath: string): void {
  const batch = batches.get(lockPath);
  if (batch) batch.open = false;
  batches.delete(lockPath);
}

/**
 * Runs `fn` while this process holds the lock on `lockPath` (see {@link withLock}) for a batch of callers that may run
 * at the same time: every withSharedLock caller on the same path that comes while a batch is open joins it, and the
 * batch takes the lock once (in the same order as withLock callers) and lets it go when its last member ended. So
 * shared callers run alongside each other, and never alongside a withLock caller of this process nor any holder in
 * another process. A withLock call closes the open batch: later shared callers form a new batch after it. The last
 * member to end returns once the lock is let go. `fn` must not call withLock on the same path (it would wait for its
 * own batch).
 * @throws Error when the cross-process lock cannot be taken within about a minute; errors from `fn` propagate
 */
export async function withSharedLock<T>(lockPath: string, fn: () => Promise<T>): Promise<T> {
  let batch = batches.get(lockPath);
  if (!batch?.open) {
    let end = (): void => undefined;
    const ended = new Promise<void>((resolve) => (end = resolve));
    let released: Promise<unknown> = Promise.resolve();
    const held = new Promise<void>((resolve, reject) => {
      released = withLock(lockPath, () => {
        resolve();
        return ended;
      }).catch(reject);
    });
    // withLock closed any batch open before; this one opens now.
    batch = { members: 0, open: true, held, end, released };
    batches.set(lockPath, batch);
  }
  const member = batch;
  member.members++;
  try {
    await member.held;
    return await fn();
  } finally {
    if (--member.members === 0) {
      if (batches.get(lockPath) === member) closeBatch(lockPath);
      member.open = false;
      member.end();
      // The last member returns once the lock is let go, as a withLock caller does.
      await member.released;
    }
  }
}
