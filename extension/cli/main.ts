import { parseArgs } from 'node:util';
import pkg from '../../package.json';
import { resolveHome } from '../core/config/home';
import { ManifestError } from '../core/manifest/types';
import { catalogCommand } from './catalog-command';
import { cleanCommand } from './clean-command';
import { demoCommand } from './demo';
import { doctorCommand } from './doctor-command';
import { hudCommand } from './hud/hud-command';
import { InputError, processIo, UsageError, type Io } from './io';
import { lintCommand } from './lint-command';
import { resumeCommand } from './resume-command';
import { modelsCommand, postgresUrlFor } from './models-command';
import { loadEngines, runCommand } from './run-command';

/** The package version, inlined by esbuild from package.json. */
const VERSION: string = pkg.version;

const USAGE = `usage: verdict <command> [options]

commands:
  run MANIFEST       run a swarm manifest (*.swarm.json / *.swarm.jsonc)
  resume RUN_ID      run again the tasks of a run that did not pass (after a crash: its INTERRUPTED tasks)
  lint MANIFEST...   check manifests for mistakes that waste a swarm (exit 1 on any error)
  demo               run the bundled demo (script engine: no model, account or key)
  models             the scoreboard: per model and task type, pass rates, medians, tiers (from runs.jsonl)
  catalog            the model catalog (OpenRouter format): snapshot, refresh, change log
  clean              remove the worktrees of finished runs (task branches only with --branches)
  hud                serve the dashboard of every run on this machine to a browser (127.0.0.1, token in the URL)
  doctor             what this machine offers a run: sandbox (and why not), git, node, engine binaries on PATH,
                     VERDICT_HOME, the config file in force (exit 0: a run can start with the defaults)

options:
  --max-parallel N   attempts at once (overrides the manifest)
  --identity NAME    who is running (default: VERDICT_IDENTITY, .fleet-agent, config, hostname)
  --home DIR         records folder (default: VERDICT_HOME or ~/.verdict)
  --config FILE      JSON config: custom engines, default identity, max_parallel, sandbox, allow_full_access
                     (default: VERDICT_CONFIG, else $XDG_CONFIG_HOME/verdict/config.json or
                     ~/.config/verdict/config.json when it exists)
  --no-sandbox       run, resume, demo: run every step without bubblewrap (said once; recorded in every row)
  --baseline         run: first run every check on the untouched tree; a check that already passes proves
                     nothing, and its task is not run
  --no-dashboard     run: do not reuse, start or open the dashboard (it is never started without a display)
  --port N           hud: port on 127.0.0.1 (default 8700; 0: any free port)
  --no-open          hud: print the URL, do not open a browser
  --explore          models: add untested catalog models (text→text, ≥ 32k context, free first, ≤ 10)
  --task-type T      models: only task type T
  --model M          models: only models whose id contains M
  --engine E         models: only attempts run by engine E
  --since DATE       models: only attempts that ended at or after DATE (YYYY-MM-DD or ISO 8601)
  --log FILE         models: read this eval log instead of <home>/runs.jsonl (Ringer's runs.jsonl too)
  --pg               models: aggregate every machine's rows in Postgres (VERDICT_PG_URL or config postgres_url)
  --json             lint, models, catalog, doctor: print JSON
  --refresh          catalog: fetch the catalog now and record what changed
  --source URL|PATH  catalog: where --refresh fetches (default: the last source, else openrouter.ai)
  --file PATH        catalog: show this OpenRouter-format file instead of the snapshot
  --free             catalog: only free models
  --changes          catalog: the change log (added, removed, price_change, went_free, went_paid)
  --run ID           clean: only this run (also one whose orchestrator died)
  --older-than DAYS  clean: only runs that ended more than DAYS days ago
  --branches         clean: also delete the task branches verdict/<run_id>/* (says which held unmerged work)
  --dry-run          clean: print what would be removed, change nothing
  -h, --help         this help
  -V, --version      the version

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
        baseline: { type: 'boolean' },
        json: { type: 'boolean' },
        'no-dashboard': { type: 'boolean' },
        'no-sandbox': { type: 'boolean' },
        port: { type: 'string' },
        'no-open': { type: 'boolean' },
        'idle-exit-s': { type: 'string' },
        explore: { type: 'boolean' },
        'task-type': { type: 'string' },
        model: { type: 'string' },
        engine: { type: 'string' },
        since: { type: 'string' },
        log: { type: 'string' },
        pg: { type: 'boolean' },
        refresh: { type: 'boolean' },
        source: { type: 'string' },
        file: { type: 'string' },
        free: { type: 'boolean' },
        changes: { type: 'boolean' },
        run: { type: 'string' },
        'older-than': { type: 'string' },
        branches: { type: 'boolean' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'V' },
      },
    });
    const [command, ...rest] = positionals;
    if (values.version) {
      io.out(`verdict ${VERSION}`);
      return 0;
    }
    if (values.help || !command) {
      io.out(USAGE);
      return values.help ? 0 : 2;
    }
    const flags = { maxParallel: values['max-parallel'], identity: values.identity, home: values.home, config: values.config, baseline: values.baseline, dashboard: values['no-dashboard'] !== true, noSandbox: values['no-sandbox'] === true };
    switch (command) {
      case 'run': {
        if (rest.length !== 1) throw new UsageError('verdict run takes exactly one manifest path');
        return (await runCommand(rest[0] as string, flags, io)).code;
      }
      case 'lint': {
        if (!rest.length) throw new UsageError('verdict lint takes one or more manifest paths');
        const { engines, settings } = loadEngines(values.config);
        return await lintCommand(rest, values.json === true, engines, settings.allowFullAccess, io);
      }
      case 'resume': {
        if (rest.length !== 1) throw new UsageError('verdict resume takes exactly one run id');
        return await resumeCommand(rest[0] as string, flags, io);
      }
      case 'demo':
        if (rest.length) throw new UsageError('verdict demo takes no arguments');
        return await demoCommand(flags, io);
      case 'doctor':
        if (rest.length) throw new UsageError('verdict doctor takes no arguments');
        return await doctorCommand({ home: values.home, config: values.config, json: values.json === true }, io);
      case 'hud':
        if (rest.length) throw new UsageError('verdict hud takes no arguments');
        return await hudCommand({ home: resolveHome(values.home), port: values.port, open: values['no-open'] !== true, idleExitS: values['idle-exit-s'] }, io);
      case 'models': {
        if (rest.length) throw new UsageError('verdict models takes no arguments (filters are flags)');
        const filters = { taskType: values['task-type'], model: values.model, engine: values.engine, since: values.since };
        const pg = values.pg ? postgresUrlFor(values.config) : undefined;
        return await modelsCommand({ home: resolveHome(values.home), explore: values.explore === true, filters, log: values.log, json: values.json === true, pg }, io);
      }
      case 'catalog':
        if (rest.length) throw new UsageError('verdict catalog takes no arguments');
        return await catalogCommand({ home: resolveHome(values.home), refresh: values.refresh === true, source: values.source, file: values.file, free: values.free === true, changes: values.changes === true, json: values.json === true }, io);
      case 'clean':
        if (rest.length) throw new UsageError('verdict clean takes no arguments (use --run ID, --older-than DAYS)');
        return await cleanCommand({ home: resolveHome(values.home), run: values.run, olderThan: values['older-than'], branches: values.branches === true, dryRun: values['dry-run'] === true }, io);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      // Node's parseArgs messages add advice about '--' that does not apply here; keep their first sentence.
      const message = (e as Error).message.replace(/\. To specify a positional argument.*$/s, '');
      io.err(`verdict: ${message}\n\n${USAGE}`);
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
