/** Where a command writes: stdout and stderr lines. Tests pass collectors. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** Set once the reader of stdout / stderr went away (`verdict demo | head -3`): later lines are dropped. */
const closed = { out: false, err: false };

/**
 * Makes a closed pipe harmless: EPIPE on stdout or stderr stops further writes there instead of crashing the process
 * (which would leave a run `running` and its workers unrecorded); the run goes on and finishes its records.
 * Call once, at startup.
 */
export function guardPipes(): void {
  for (const [name, stream] of [
    ['out', process.stdout],
    ['err', process.stderr],
  ] as const) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE') throw e;
      closed[name] = true;
    });
  }
}

/** The process's own stdout/stderr. */
export const processIo: Io = {
  out: (line) => void (closed.out || process.stdout.write(line + '\n')),
  err: (line) => void (closed.err || process.stderr.write(line + '\n')),
};

/** A mistake in how the command was called: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Bad input in a file the user gave (config, engine definitions): the message names the file and field; exit 2. */
export class InputError extends Error {
  override name = 'InputError';
}

/**
 * True when `e` is an error of class `type`, or of a class of the same name. The command modules are loaded with
 * `import()` when they run (commands.ts); a loader that runs them apart from the table (tsx under mocha loads the
 * table as CommonJS and each imported command as ESM, so this module exists twice) would make instanceof alone miss
 * a command's UsageError and turn bad input into an "internal error". The bundle holds one copy of each class.
 */
export function isErrorOf<T extends Error>(e: unknown, type: abstract new (...args: never[]) => T): e is T {
  return e instanceof type || (e instanceof Error && e.name === type.name);
}
