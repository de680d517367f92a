import { parseArgs } from 'node:util';
import { isErrorOf, UsageError, type Io } from './io';

/**
 * The shape of a CLI command table (the table itself is commands.ts) and what is derived from it: the usage text,
 * each command's help, and per-command flag validation with node:util parseArgs (strict). Knows no command.
 */

/** One flag of one command, spelled without its dashes (`max-parallel`). */
export interface FlagSpec {
  type: 'string' | 'boolean';
  /** Name of the value in the help (`N`, `DIR`); string flags only. */
  value?: string;
  /** One line: what the flag does. */
  help: string;
  /**
   * What happens without the flag, shown in the help as "(default: …)". Only shown: the handler resolves it
   * (a default often comes from the environment or the config file). Boolean flags are false when absent.
   */
  default?: string;
}

/** A positional argument: `NAME`, `NAME...` (`repeat`: one or more), `[NAME]` (`optional`), `[NAME...]`. */
export interface ArgSpec {
  name: string;
  repeat?: boolean;
  optional?: boolean;
}

/** Flag values as the handler receives them: a boolean flag is false when absent, a string flag undefined. */
export type FlagValues<F extends Record<string, FlagSpec>> = {
  [K in keyof F]: F[K]['type'] extends 'boolean' ? boolean : F[K]['type'] extends 'string' ? string | undefined : string | boolean | undefined;
};

/** One subcommand: everything the usage text, the validation and the dispatch need. */
export interface CommandSpec<F extends Record<string, FlagSpec> = Record<string, FlagSpec>> {
  name: string;
  args: readonly ArgSpec[];
  flags: F;
  /** One line for the command list of `verdict --help`. */
  summary: string;
  /** One line: what the exit codes mean for this command (0/1/2). */
  exit: string;
  /**
   * Does the work; `args` are the positionals (their count already checked against `args`).
   * Returns the exit code. Throws UsageError (exit 2, with the usage), InputError or ManifestError (exit 2).
   */
  run(input: { args: string[]; flags: FlagValues<F> }, io: Io): Promise<number>;
}

/** Declares one command, inferring its flag names and types for its handler. */
export function command<const F extends Record<string, FlagSpec>>(spec: CommandSpec<F>): CommandSpec<F> {
  return spec;
}

/** A table's entry, whatever its flags (its handler is only called through {@link runCommandLine}). */
export type AnyCommand = CommandSpec;

/** A mistake in how one command was called: printed with that command's usage line; exit 2. */
export class CommandUsageError extends UsageError {
  constructor(
    readonly command: AnyCommand,
    message: string,
  ) {
    super(message);
  }
}

/** parseArgs' options for one command: its flags and -h/--help. */
type ParseOptions = Record<string, { type: 'string' | 'boolean'; short?: string }>;

/** Width of the name column in every help listing (commands and flags), after a two-space indent. */
const COLUMN = 19;
/** Help lines longer than this put a flag's default on a line of its own. */
const WIDTH = 120;

const row = (left: string, right: string) => (left.length <= COLUMN - 2 ? `  ${left.padEnd(COLUMN)}${right}` : `  ${left}\n  ${''.padEnd(COLUMN)}${right}`);

const argText = (a: ArgSpec) => {
  const name = a.repeat ? `${a.name}...` : a.name;
  return a.optional ? `[${name}]` : name;
};

const flagText = (name: string, f: FlagSpec) => (f.type === 'string' ? `--${name} ${f.value ?? 'VALUE'}` : `--${name}`);

/** `verdict run MANIFEST [--max-parallel N] …`: the command, its positionals and every flag, on one line. */
export function usageLine(c: AnyCommand): string {
  return ['verdict', c.name, ...c.args.map(argText), ...Object.entries(c.flags).map(([n, f]) => `[${flagText(n, f)}]`)].join(' ');
}

/** The usage lines of every command, then help and version: the README's block "The `verdict` command". */
export function usageBlock(table: readonly AnyCommand[]): string {
  return [...table.map(usageLine), 'verdict <command> --help', 'verdict --version'].join('\n');
}

/** `verdict --help`: the commands with their summaries. */
export function mainHelp(table: readonly AnyCommand[]): string {
  return [
    'usage: verdict <command> [options]',
    '',
    'commands:',
    ...table.map((c) => row([c.name, ...c.args.map(argText)].join(' '), c.summary)),
    '',
    'options:',
    row('-h, --help', "this help; verdict <command> --help: that command's arguments and options"),
    row('-V, --version', 'the version'),
    '',
    'exit codes: 0 success (run: every task passed), 1 some task did not pass or the command failed, 2 bad input',
  ].join('\n');
}

/** `verdict <command> --help`: its usage line, summary, flags (with defaults) and exit codes. */
export function commandHelp(c: AnyCommand): string {
  const flags = Object.entries(c.flags).map(([n, f]) => {
    const line = row(flagText(n, f), f.default ? `${f.help} (default: ${f.default})` : f.help);
    return f.default && line.length > WIDTH ? `${row(flagText(n, f), f.help)}\n${row('', `(default: ${f.default})`)}` : line;
  });
  return [`usage: ${usageLine(c)}`, '', c.summary, '', 'options:', ...flags, row('-h, --help', 'this help'), '', `exit codes: ${c.exit}`].join('\n');
}

/** The commands of `table` that take flag `name`, for "--free is an option of catalog". */
function ownerOf(table: readonly AnyCommand[], name: string): string[] {
  return table.filter((c) => Object.hasOwn(c.flags, name)).map((c) => c.name);
}

/** What one command line asks for. */
export type Parsed =
  | { kind: 'help'; text: string; code: 0 | 2 }
  | { kind: 'version' }
  | { kind: 'run'; command: AnyCommand; args: string[]; flags: Record<string, string | boolean | undefined> };

/**
 * Parses `argv` (without node and script) against `table`: the command comes first, then its positionals and flags
 * in any order. Only `-h/--help` and `-V/--version` come before a command; `-h/--help` also after one.
 * @throws UsageError for no such command or an option before the command; CommandUsageError for an unknown
 *   option (naming the flag, the command, what it takes and which command takes that flag), a flag without its
 *   value or a boolean flag given one, and too few or too many positionals
 */
export function parseCommandLine(table: readonly AnyCommand[], argv: readonly string[]): Parsed {
  const [first, ...rest] = argv;
  if (first === undefined) return { kind: 'help', text: mainHelp(table), code: 2 };
  if (first === '-h' || first === '--help') return { kind: 'help', text: mainHelp(table), code: 0 };
  if (first === '-V' || first === '--version') return { kind: 'version' };
  if (first.startsWith('-')) throw new UsageError(`unknown option ${first} before the command (options come after it: verdict <command> [options])`);
  const c = table.find((t) => t.name === first);
  if (!c) throw new UsageError(`unknown command "${first}"`);

  const specs = c.flags;
  const options: ParseOptions = { help: { type: 'boolean', short: 'h' } };
  for (const [name, f] of Object.entries(specs)) options[name] = { type: f.type };
  let parsed;
  try {
    parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw unknownOption(table, c, rest, options);
    // Node's own messages add advice about '--' that does not apply here; keep their first sentence.
    if (code?.startsWith('ERR_PARSE_ARGS')) throw new CommandUsageError(c, (e as Error).message.replace(/\. To specify a positional argument.*$/s, ''));
    throw e;
  }
  if (parsed.values.help) return { kind: 'help', text: commandHelp(c), code: 0 };
  checkPositionals(c, parsed.positionals);
  const flags: Record<string, string | boolean | undefined> = {};
  for (const [name, f] of Object.entries(specs))
    flags[name] = f.type === 'boolean' ? parsed.values[name] === true : (parsed.values[name] as string | undefined);
  return { kind: 'run', command: c, args: parsed.positionals, flags };
}

/** The error for the first option of `argv` that `c` does not take (found again without strict, from the tokens). */
function unknownOption(table: readonly AnyCommand[], c: AnyCommand, argv: readonly string[], options: ParseOptions): CommandUsageError {
  const { tokens } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: false, tokens: true });
  const token = tokens.find((t) => t.kind === 'option' && !Object.hasOwn(options, t.name));
  const raw = token?.kind === 'option' ? token.rawName : '?';
  const takes = Object.entries(c.flags).map(([n]) => `--${n}`);
  const others = token?.kind === 'option' ? ownerOf(table, token.name) : [];
  const elsewhere = others.length ? `; ${raw} is an option of ${others.join(', ')}` : '';
  return new CommandUsageError(c, `unknown option ${raw} (${c.name} takes: ${takes.length ? takes.join(', ') : 'no options'}${elsewhere})`);
}

/** @throws CommandUsageError when `positionals` do not fit `c.args` */
function checkPositionals(c: AnyCommand, positionals: string[]): void {
  let i = 0;
  for (const a of c.args) {
    const left = positionals.length - i;
    if (left === 0 && !a.optional) throw new CommandUsageError(c, `missing ${a.name}${a.repeat ? ' (one or more)' : ''}`);
    i = a.repeat ? positionals.length : Math.min(i + 1, positionals.length);
  }
  if (i < positionals.length) {
    const extra = positionals
      .slice(i)
      .map((p) => JSON.stringify(p))
      .join(' ');
    throw new CommandUsageError(
      c,
      c.args.length ? `unexpected argument ${extra} (takes ${c.args.map(argText).join(' ')})` : `takes no arguments, got ${extra}`,
    );
  }
}

/**
 * Parses `argv` against `table` and runs what it asks for. Prints help to stdout; usage mistakes go to the caller
 * as thrown errors (see parseCommandLine). Returns the exit code.
 */
export async function runCommandLine(table: readonly AnyCommand[], argv: readonly string[], io: Io, version: string): Promise<number> {
  const p = parseCommandLine(table, argv);
  switch (p.kind) {
    case 'help':
      io.out(p.text);
      return p.code;
    case 'version':
      io.out(`verdict ${version}`);
      return 0;
    case 'run':
      try {
        return await p.command.run({ args: p.args, flags: p.flags }, io);
      } catch (e) {
        // A handler's own flag check (`--port must be 0..65535`) is a mistake in how this command was called.
        if (isErrorOf(e, UsageError) && !(e instanceof CommandUsageError)) throw new CommandUsageError(p.command, e.message);
        throw e;
      }
  }
}
