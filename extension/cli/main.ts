import { parseArgs } from 'node:util';
import { ManifestError } from '../core/manifest/types';
import { demoCommand } from './demo';
import { InputError, processIo, UsageError, type Io } from './io';
import { runCommand } from './run-command';

const USAGE = `usage: verdict <command> [options]

commands:
  run MANIFEST   run a swarm manifest (*.swarm.json / *.swarm.jsonc)
  demo           run the bundled demo (script engine: no model, account or key)

options:
  --max-parallel N   attempts at once (overrides the manifest)
  --identity NAME    who is running (default: VERDICT_IDENTITY, .fleet-agent, config, hostname)
  --home DIR         records folder (default: VERDICT_HOME or ~/.verdict)
  --config FILE      JSON config: custom engines, default identity
  -h, --help         this help

exit codes: 0 every task passed, 1 some task did not, 2 bad input`;

/** Runs the CLI with `argv` (without node and script). Returns the process exit code; never calls process.exit. */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'max-parallel': { type: 'string' },
        identity: { type: 'string' },
        home: { type: 'string' },
        config: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    const [command, ...rest] = positionals;
    if (values.help || !command) {
      io.out(USAGE);
      return values.help ? 0 : 2;
    }
    const flags = { maxParallel: values['max-parallel'], identity: values.identity, home: values.home, config: values.config };
    switch (command) {
      case 'run': {
        if (rest.length !== 1) throw new UsageError('verdict run takes exactly one manifest path');
        return (await runCommand(rest[0] as string, flags, io)).code;
      }
      case 'demo':
        if (rest.length) throw new UsageError('verdict demo takes no arguments');
        return await demoCommand(flags, io);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`verdict: ${(e as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof ManifestError || e instanceof InputError) {
      io.err(`verdict: ${(e as Error).message}`);
      return 2;
    }
    io.err(`verdict: internal error: ${(e as Error).stack ?? e}`);
    return 1;
  }
}
