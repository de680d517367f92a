import pkg from '../../package.json';
import { ManifestError } from '../core/manifest/types';
import { CommandUsageError, mainHelp, runCommandLine, usageLine } from './command-line';
import { COMMANDS } from './commands';
import { InputError, isErrorOf, processIo, UsageError, type Io } from './io';

/** The package version, inlined by esbuild from package.json. */
const VERSION: string = pkg.version;

/**
 * Runs the CLI with `argv` (without node and script): the command of {@link COMMANDS} it names, with its flags.
 * Returns the process exit code (0/1 as the command says, 2 bad input); never calls process.exit.
 */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  try {
    return await runCommandLine(COMMANDS, argv, io, VERSION);
  } catch (e) {
    if (e instanceof CommandUsageError) {
      io.err(`verdict ${e.command.name}: ${e.message}\n\nusage: ${usageLine(e.command)}\n(verdict ${e.command.name} --help: what each option does)`);
      return 2;
    }
    if (isErrorOf(e, UsageError)) {
      io.err(`verdict: ${e.message}\n\n${mainHelp(COMMANDS)}`);
      return 2;
    }
    if (isErrorOf(e, ManifestError) || isErrorOf(e, InputError)) {
      io.err(`verdict: ${e.message}`);
      return 2;
    }
    io.err(`verdict: internal error: ${(e as Error).stack ?? e}`);
    return 1;
  }
}
