/** Where a command writes: stdout and stderr lines. Tests pass collectors. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** The process's own stdout/stderr. */
export const processIo: Io = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

/** A mistake in how the command was called: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Bad input in a file the user gave (config, engine definitions): the message names the file and field; exit 2. */
export class InputError extends Error {
  override name = 'InputError';
}
