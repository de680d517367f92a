import { resolveHome } from '../core/config/home';
import { command, type AnyCommand, type FlagSpec, type FlagValues } from './command-line';
import { InputError } from './io';
import type { RunFlags } from './run-command';

// Only the table is loaded at start: each handler imports its command's module when it runs (esbuild splits them into
// chunks, docs/build.md "Start-up"), so `verdict --version` or `verdict lint` never loads the runner, sql.js,
// pg, pg-boss or the hud server.
/**
 * Every `verdict` subcommand, one entry each: name, positionals, its own flags, summary, exit codes and handler.
 * `verdict --help`, `verdict <command> --help`, the README's usage block (checked by test/unit/cli-table.unit.test.ts)
 * and the flag validation all come from this table. To add a command, add an entry (see command-line.ts's
 * CommandSpec); the handler adapts the parsed flags to the command module's function.
 */

const home = { type: 'string', value: 'DIR', help: 'records folder', default: 'VERDICT_HOME or ~/.verdict' } as const satisfies FlagSpec;
const config = {
  type: 'string',
  value: 'FILE',
  help: 'JSON config: engines, identity, max_parallel, sandbox, allow_full_access, postgres_url',
  default: 'VERDICT_CONFIG, else <$XDG_CONFIG_HOME or ~/.config>/verdict/config.json if it exists',
} as const satisfies FlagSpec;
const json = { type: 'boolean', help: 'print JSON' } as const satisfies FlagSpec;
const noWait = { type: 'boolean', help: 'return once the command is sent, without waiting for its acknowledgment' } as const satisfies FlagSpec;
/** The flags of the control verbs (stop, pause, drain, unwait). */
const controlFlags = {
  identity: {
    type: 'string',
    value: 'NAME',
    help: 'who sends it (recorded with the acknowledgment)',
    default: 'VERDICT_IDENTITY, .fleet-agent, config, hostname',
  },
  'no-wait': noWait,
  home,
} as const satisfies Record<string, FlagSpec>;
/** The options every control verb takes from its flags. */
function controlOptions(flags: { home?: string; identity?: string; 'no-wait': boolean }): { home: string; identity?: string; noWait: boolean } {
  return { home: resolveHome(flags.home), identity: flags.identity, noWait: flags['no-wait'] };
}

/** What every starting command does first: reconcile runs whose orchestrator died (orphaned workers killed). */
async function reconcileAtStart(homeFlag: string | undefined, io: Parameters<AnyCommand['run']>[1]): Promise<void> {
  const { reconcileAndReport } = await import('./run-command');
  await reconcileAndReport(resolveHome(homeFlag), (await import('./load-engines')).loadEngines(undefined).engines, io);
}

const controlExit = '0 done, 1 refused or not acknowledged within 15 s, 2 bad input (no such run, not live, no such task)';

/** The flags of every command that runs a manifest: run, resume, demo. */
const runFlags = {
  'max-parallel': { type: 'string', value: 'N', help: 'attempts at once (overrides the manifest)' },
  identity: { type: 'string', value: 'NAME', help: 'who is running', default: 'VERDICT_IDENTITY, .fleet-agent, config, hostname' },
  home,
  config,
  baseline: { type: 'boolean', help: 'first run every check on the untouched tree: a task whose check already passes is not run' },
  'no-sandbox': { type: 'boolean', help: 'run every step without bubblewrap (said once; recorded in every row)' },
  'no-dashboard': { type: 'boolean', help: 'do not reuse, start or open the dashboard (it is never started without a display)' },
  force: { type: 'boolean', help: 'start even when lint finds errors (recorded as forced: true in the run and every eval row)' },
} as const satisfies Record<string, FlagSpec>;

/** The flags of resume and rerun of a run that ended, besides runFlags: the budgets it goes on under. */
const budgetFlags = {
  'budget-usd': {
    type: 'string',
    value: 'USD',
    help: 'its budget_usd from now on (a higher one goes on after BUDGET_EXCEEDED); its spend still counts',
    default: 'the budget it had',
  },
  'budget-tokens': { type: 'string', value: 'N', help: 'its budget_tokens from now on; the tokens it used still count', default: 'the budget it had' },
} as const satisfies Record<string, FlagSpec>;

const runFlagsOf = (f: FlagValues<typeof runFlags>): RunFlags => ({
  maxParallel: f['max-parallel'],
  identity: f.identity,
  home: f.home,
  config: f.config,
  baseline: f.baseline,
  dashboard: !f['no-dashboard'],
  noSandbox: f['no-sandbox'],
  force: f.force,
});

export const COMMANDS: readonly AnyCommand[] = [
  command({
    name: 'run',
    args: [{ name: 'MANIFEST' }],
    flags: {
      ...runFlags,
      only: { type: 'string', value: 'KEYS', help: 'run only these tasks (comma-separated task keys)' },
      pool: {
        type: 'string',
        value: 'URL',
        help: 'run the attempts on the worker pool of this Postgres (`verdict pool worker`; docs/scale.md)',
        default: 'the manifest\'s pool, else the config\'s "pool"',
      },
      remote: { type: 'string', value: 'GIT', help: 'pool runs: the git remote every worker fetches from and pushes to', default: "the manifest's remote" },
    },
    summary: 'run a swarm manifest (*.swarm.json / *.swarm.jsonc)',
    exit: '0 every task passed, 1 some task did not, 2 bad input or a lint error without --force (nothing is created)',
    run: async ({ args: [manifest], flags }, io) =>
      (
        await (
          await import('./run-command')
        ).runCommand(manifest as string, { ...runFlagsOf(flags), only: flags.only, pool: flags.pool, remote: flags.remote }, io)
      ).code,
  }),
  command({
    name: 'pool',
    args: [{ name: 'ACTION' }],
    flags: {
      db: { type: 'string', value: 'URL', help: "the pool's Postgres", default: 'VERDICT_POOL_URL' },
      slots: { type: 'string', value: 'N', help: 'worker: attempts at once', default: '1' },
      engines: {
        type: 'string',
        value: 'NAMES',
        help: 'worker: the engines it takes attempts of (comma-separated)',
        default: 'every engine whose command is on PATH',
      },
      host: { type: 'string', value: 'NAME', help: 'worker: its name in rows and status', default: 'the short hostname' },
      'no-sandbox': runFlags['no-sandbox'],
      json,
      home,
      config,
    },
    summary: "worker: run pool runs' attempts here until Ctrl-C (drains); status: the pool's workers and queues",
    exit: '0 drained or printed, 2 bad input or the database cannot be reached',
    run: async ({ args: [action], flags }, io) =>
      (await import('./pool-command')).poolCommand(
        action as string,
        {
          db: flags.db,
          slots: flags.slots,
          engines: flags.engines,
          host: flags.host,
          home: flags.home,
          config: flags.config,
          noSandbox: flags['no-sandbox'],
          json: flags.json,
        },
        io,
      ),
  }),
  command({
    name: 'resume',
    args: [{ name: 'RUN' }],
    flags: { ...runFlags, ...budgetFlags, 'no-wait': noWait },
    summary: 'a paused live run: go on; one that ended: the same run runs again its tasks that did not pass',
    exit: '0 unpaused, or all passed (or none left), 1 some did not, 2 bad input, a lint error without --force, busy',
    run: async ({ args: [run], flags }, io) => {
      const home = resolveHome(flags.home);
      const { liveRun, sendControl } = await import('./control-command');
      const live = liveRun(home, run as string);
      if (live && !live.state.paused) {
        const s = live.state;
        throw new InputError(
          `run ${s.runId} is live (its orchestrator is pid ${s.pid} on ${s.host}, identity ${s.identity}) and not paused: nothing to resume`,
        );
      }
      if (live && (flags['budget-usd'] !== undefined || flags['budget-tokens'] !== undefined))
        throw new InputError(
          `run ${live.state.runId} is live (paused): --budget-usd and --budget-tokens apply to a run that ended (stop it, then resume it with the new budget)`,
        );
      if (live) return sendControl(live, 'resume', undefined, { home, identity: flags.identity, noWait: flags['no-wait'] }, io);
      return (await import('./resume-command')).continueCommand(
        run as string,
        'resume',
        undefined,
        { ...runFlagsOf(flags), budgetUsd: flags['budget-usd'], budgetTokens: flags['budget-tokens'] },
        io,
      );
    },
  }),
  command({
    name: 'stop',
    args: [{ name: 'RUN' }, { name: 'TASK', optional: true }],
    flags: controlFlags,
    summary: 'stop one task of a live run (recorded CANCELLED, not retried); without TASK, cancel the run',
    exit: controlExit,
    run: async ({ args: [run, task], flags }, io) => (await import('./control-command')).stopCommand(run as string, task, controlOptions(flags), io),
  }),
  command({
    name: 'pause',
    args: [{ name: 'RUN' }],
    flags: controlFlags,
    summary: 'a live run starts no new attempt (running ones go on) until `verdict resume RUN`',
    exit: controlExit,
    run: async ({ args: [run], flags }, io) => {
      const [{ resolveRun }, { sendControl }] = await Promise.all([import('./runs-command'), import('./control-command')]);
      return sendControl(resolveRun(resolveHome(flags.home), run as string), 'pause', undefined, controlOptions(flags), io);
    },
  }),
  command({
    name: 'drain',
    args: [{ name: 'RUN' }],
    flags: controlFlags,
    summary: 'a live run finishes what runs, starts nothing more (queued tasks CANCELLED "drained") and ends',
    exit: controlExit,
    run: async ({ args: [run], flags }, io) => {
      const [{ resolveRun }, { sendControl }] = await Promise.all([import('./runs-command'), import('./control-command')]);
      return sendControl(resolveRun(resolveHome(flags.home), run as string), 'drain', undefined, controlOptions(flags), io);
    },
  }),
  command({
    name: 'rerun',
    args: [{ name: 'RUN' }, { name: 'TASK' }],
    flags: { ...runFlags, ...budgetFlags, 'no-wait': noWait },
    summary: 'give one task new attempts (a run that ended: the same run runs it and its BLOCKED dependents)',
    exit: 'live: 0 done, 1 refused or no ack in 15 s; ended: 0 all passed, 1 some failed; 2 bad input, lint error, busy',
    run: async ({ args: [run, task], flags }, io) => {
      const home = resolveHome(flags.home);
      const { liveRun, sendControl } = await import('./control-command');
      const live = liveRun(home, run as string);
      if (live && (flags['budget-usd'] !== undefined || flags['budget-tokens'] !== undefined))
        throw new InputError(`run ${live.state.runId} is live: --budget-usd and --budget-tokens apply to a run that ended`);
      if (live) return sendControl(live, 'rerun', task, { home, identity: flags.identity, noWait: flags['no-wait'] }, io);
      return (await import('./resume-command')).continueCommand(
        run as string,
        'rerun',
        task,
        { ...runFlagsOf(flags), budgetUsd: flags['budget-usd'], budgetTokens: flags['budget-tokens'] },
        io,
      );
    },
  }),
  command({
    name: 'unwait',
    args: [{ name: 'RUN' }, { name: 'ENGINE' }],
    flags: controlFlags,
    summary: "a live run's ENGINE stops waiting for its quota reset: its tasks start again at once",
    exit: controlExit,
    run: async ({ args: [run, engine], flags }, io) =>
      (await import('./control-command')).unwaitCommand(run as string, engine as string, controlOptions(flags), io),
  }),
  command({
    name: 'merge',
    args: [{ name: 'RUN' }, { name: 'TASK', repeat: true, optional: true }],
    flags: { batch: { type: 'boolean', help: 'merge every passing branch first, run the suite once on the result, bisect only when it fails' }, home },
    summary: 'merge passed task branches into the current branch: rebase, re-check, suite, fast-forward',
    exit: '0 all merged, 1 some did not (conflict, failed re-check or suite, not passed, dirty tree), 2 bad input',
    run: async ({ args: [run, ...tasks], flags }, io) =>
      (await import('./control-command')).mergeCommand(run as string, tasks, { home: resolveHome(flags.home), batch: flags.batch === true }, io),
  }),
  command({
    name: 'discard',
    args: [{ name: 'RUN' }, { name: 'TASK' }],
    flags: { home },
    summary: "remove a task's worktree and delete its branch, asking nothing (not while a live run works on it)",
    exit: '0 discarded, 1 a live process works in its worktree, 2 bad input (no such run or task, plain mode, running)',
    run: async ({ args: [run, task], flags }, io) =>
      (await import('./control-command')).discardCommand(run as string, task as string, { home: resolveHome(flags.home) }, io),
  }),
  command({
    name: 'runs',
    args: [{ name: 'RUN', optional: true }],
    flags: { json, home },
    summary: 'every run, live first (id, name, identity, started, state, passed/total); RUN: its tasks and steps',
    exit: '0 listed, 2 no such run',
    run: async ({ args: [run], flags }, io) => {
      const { runsCommand, runTasksCommand } = await import('./runs-command');
      return run === undefined
        ? runsCommand({ home: resolveHome(flags.home), json: flags.json }, io)
        : runTasksCommand(run, { home: resolveHome(flags.home), json: flags.json }, io);
    },
  }),
  command({
    name: 'plan',
    args: [{ name: 'MANIFEST' }],
    flags: { json, home, config },
    summary: 'forecast before launch: expected attempts, cost (p50, p90) and duration per task, from the eval log',
    exit: '0 printed, 2 bad input (the manifest does not load)',
    run: async ({ args: [file], flags }, io) => {
      const { engines, config: c } = (await import('./load-engines')).loadEngines(flags.config);
      return (await import('./plan-command')).planCommand(
        file as string,
        { home: resolveHome(flags.home), json: flags.json === true, engines, route: c.route ?? null },
        io,
      );
    },
  }),
  command({
    name: 'lint',
    args: [{ name: 'MANIFEST', repeat: true }],
    flags: { json, home, config },
    summary: 'check manifests for mistakes that waste a swarm (exit 1 on any error)',
    exit: '0 no finding is an error, 1 some is, 2 bad input',
    run: async ({ args, flags }, io) => {
      const { engines, settings, config: c } = (await import('./load-engines')).loadEngines(flags.config);
      return (await import('./lint-command')).lintCommand(args, flags.json, engines, settings.allowFullAccess, io, {
        home: resolveHome(flags.home),
        route: c.route ?? null,
      });
    },
  }),
  command({
    name: 'init',
    args: [],
    flags: {
      template: { type: 'string', value: 'T', help: 'the template to write (`--list` names them)', default: 'fan-out' },
      dir: { type: 'string', value: 'DIR', help: 'the folder to write into (created when missing)', default: 'the current folder' },
      list: { type: 'boolean', help: 'list the templates with a line each; write nothing' },
    },
    summary: 'write a manifest from a template (`--list` shows them) into a folder; never overwrites a file',
    exit: '0 written or listed, 1 a file it would write exists (nothing written), 2 bad input (no such template)',
    run: async ({ flags }, io) => (await import('./init-command')).initCommand({ template: flags.template, dir: flags.dir, list: flags.list }, io),
  }),
  command({
    name: 'demo',
    args: [],
    flags: runFlags,
    summary: 'run the bundled demo (script engine: no model, account or key)',
    exit: '0 the demo ended with the verdicts it is built to show, 1 it did not, 2 bad input',
    run: async ({ flags }, io) => (await import('./demo')).demoCommand(runFlagsOf(flags), io),
  }),
  command({
    name: 'models',
    args: [],
    flags: {
      explore: { type: 'boolean', help: 'add untested catalog models (text→text, ≥ 32k context, free first, ≤ 10)' },
      'task-type': { type: 'string', value: 'T', help: 'only task type T' },
      model: { type: 'string', value: 'M', help: 'only models whose id contains M' },
      engine: { type: 'string', value: 'E', help: 'only attempts run by engine E' },
      since: { type: 'string', value: 'DATE', help: 'only attempts that ended at or after DATE (YYYY-MM-DD or ISO 8601)' },
      log: { type: 'string', value: 'FILE', help: "read this eval log instead of <home>/runs.jsonl (Ringer's runs.jsonl too)" },
      pg: { type: 'boolean', help: "aggregate every machine's rows in Postgres (VERDICT_PG_URL or the config's postgres_url)" },
      route: { type: 'string', value: 'T', help: 'how engine "auto" ranks its candidates on task type T, and what it would pick' },
      manifest: { type: 'string', value: 'FILE', help: "with --route: the candidates of this manifest's route block (default: the config's)" },
      json,
      home,
      config,
    },
    summary: 'the scoreboard: per model and task type, pass rates, medians, tiers (from runs.jsonl)',
    exit: '0 shown, 1 shown but --pg found swarm_runs edited (those rows left out), 2 bad flags or input',
    run: async ({ flags }, io) => {
      if (flags.route !== undefined) {
        const { engines, config: c } = (await import('./load-engines')).loadEngines(flags.config);
        return (await import('./route-command')).routeCommand(
          flags.route,
          { home: resolveHome(flags.home), log: flags.log, manifest: flags.manifest, json: flags.json === true, engines, configRoute: c.route ?? null },
          io,
        );
      }
      const { modelsCommand, postgresUrlFor } = await import('./models-command');
      const filters = { taskType: flags['task-type'], model: flags.model, engine: flags.engine, since: flags.since };
      const pg = flags.pg ? postgresUrlFor(flags.config) : undefined;
      return modelsCommand({ home: resolveHome(flags.home), explore: flags.explore, filters, log: flags.log, json: flags.json, pg }, io);
    },
  }),
  command({
    name: 'catalog',
    args: [],
    flags: {
      refresh: { type: 'boolean', help: 'fetch the catalog now and record what changed' },
      source: { type: 'string', value: 'URL|PATH', help: 'where --refresh fetches', default: 'the last source, else openrouter.ai' },
      file: { type: 'string', value: 'PATH', help: 'show this OpenRouter-format file instead of the snapshot' },
      free: { type: 'boolean', help: 'only free models' },
      changes: { type: 'boolean', help: 'the change log (added, removed, price_change, went_free, went_paid)' },
      json,
      home,
    },
    summary: 'the model catalog (OpenRouter format): snapshot, refresh, change log',
    exit: '0 shown, 1 no snapshot yet, 2 bad input (a source of the wrong shape: the previous snapshot is kept)',
    run: async ({ flags }, io) =>
      (await import('./catalog-command')).catalogCommand(
        {
          home: resolveHome(flags.home),
          refresh: flags.refresh,
          source: flags.source,
          file: flags.file,
          free: flags.free,
          changes: flags.changes,
          json: flags.json,
        },
        io,
      ),
  }),
  command({
    name: 'clean',
    args: [],
    flags: {
      run: { type: 'string', value: 'ID', help: 'only this run (also one whose orchestrator died)' },
      'older-than': { type: 'string', value: 'DAYS', help: 'only runs that ended more than DAYS days ago' },
      branches: { type: 'boolean', help: 'also delete the task branches verdict/<run_id>/* (says which held unmerged work)' },
      'dry-run': { type: 'boolean', help: 'print what would be removed, change nothing' },
      home,
    },
    summary: 'remove the worktrees of finished runs (task branches only with --branches)',
    exit: '0 cleaned, 1 something could not be removed, 2 bad input (--run naming no run)',
    run: async ({ flags }, io) => {
      // A run whose orchestrator died is reconciled first (orphaned workers killed), as every starting command does;
      // not in a dry run, which changes nothing (such a run is listed as resumable and kept either way).
      if (!flags['dry-run']) await reconcileAtStart(flags.home, io);
      return (await import('./clean-command')).cleanCommand(
        { home: resolveHome(flags.home), run: flags.run, olderThan: flags['older-than'], branches: flags.branches, dryRun: flags['dry-run'] },
        io,
      );
    },
  }),
  command({
    name: 'hud',
    args: [],
    flags: {
      port: { type: 'string', value: 'N', help: 'port on 127.0.0.1 (0: any free port)', default: '8700, or a free port when it is taken' },
      'no-open': { type: 'boolean', help: 'print the URL, do not open a browser' },
      'idle-exit-s': { type: 'string', value: 'S', help: 'exit after S seconds with no page open and no run running (`verdict run` starts one with 600)' },
      pool: { type: 'string', value: 'URL', help: 'also show this worker pool\'s workers (default $VERDICT_POOL_URL, else the config\'s "pool")' },
      home,
    },
    summary: 'serve the dashboard of every run on this machine to a browser (127.0.0.1, token in the URL)',
    exit: '0 a clean stop (Ctrl-C), 2 bad flags or a taken --port',
    run: async ({ flags }, io) => {
      await reconcileAtStart(flags.home, io);
      return (await import('./hud/hud-command')).hudCommand(
        { home: resolveHome(flags.home), port: flags.port, open: !flags['no-open'], idleExitS: flags['idle-exit-s'], pool: flags.pool },
        io,
      );
    },
  }),
  command({
    name: 'doctor',
    args: [{ name: 'MANIFEST', optional: true }],
    flags: {
      json,
      home,
      config,
      probe: { type: 'boolean', help: 'also send each installed, logged-in engine a one-line prompt (a real model call: a few tokens each)' },
    },
    summary: 'what this machine offers a run (sandbox, git, engines, home); with MANIFEST, can each task run here',
    exit: '0 a run can start here with the defaults (and every task of MANIFEST can), 1 it cannot (listed)',
    run: async ({ args: [manifest], flags }, io) =>
      (await import('./doctor-command')).doctorCommand({ home: flags.home, config: flags.config, json: flags.json, probe: flags.probe, manifest }, io),
  }),
  command({
    name: 'mcp',
    args: [],
    flags: {
      workspace: { type: 'string', value: 'DIR', help: 'the folder manifests must be in (paths outside it are refused)', default: 'the current folder' },
      identity: { type: 'string', value: 'NAME', help: 'who starts and controls runs', default: 'VERDICT_IDENTITY, .fleet-agent, config, hostname' },
      home,
      config,
    },
    summary: 'an MCP server on stdio for agents: lint, run, status, control, merge, scoreboard',
    exit: '0 the client disconnected, 2 bad input (no such workspace)',
    run: async ({ flags }, io) =>
      (await import('./mcp/mcp-command')).mcpCommand({ home: flags.home, config: flags.config, workspace: flags.workspace, identity: flags.identity }, io),
  }),
  command({
    name: 'install-agent',
    args: [],
    flags: { project: { type: 'boolean', help: 'write into this folder (.claude/, .mcp.json) instead of your user settings' } },
    summary: 'give Claude Code (and Codex) the Verdict skill, two nudge hooks and the MCP server',
    exit: '0 installed (or already), 2 a settings file is not a JSON object (nothing written)',
    run: async ({ flags }, io) => {
      const { agentTargets, installAgent } = await import('./agent/install');
      return (installAgent(agentTargets(flags.project), (await import('./mcp/mcp-command')).verdictLaunch(), io), 0);
    },
  }),
  command({
    name: 'uninstall-agent',
    args: [],
    flags: { project: { type: 'boolean', help: 'remove what install-agent --project wrote in this folder' } },
    summary: 'remove what install-agent wrote; your other skills, hooks and settings stay as they are',
    exit: '0 removed (or nothing was there), 2 a settings file is not a JSON object',
    run: async ({ flags }, io) => {
      const { agentTargets, uninstallAgent } = await import('./agent/install');
      return (uninstallAgent(agentTargets(flags.project), io), 0);
    },
  }),
  command({
    name: 'agent-hook',
    args: [{ name: 'MODE' }],
    flags: { home },
    summary: "the hook install-agent registers (pre-bash, post-edit): reads Claude Code's JSON on stdin",
    exit: '0 always: a hook never blocks',
    run: async ({ args: [mode], flags }, io) => (await import('./agent/nudge')).agentHookCommand(mode as string, resolveHome(flags.home), io.out),
  }),
  command({
    name: 'backfill',
    args: [],
    flags: {
      mapping: { type: 'string', value: 'FILE', help: 'JSON object: "run_id:task_key", "run_id" or "name:prefix" to task_type' },
      log: { type: 'string', value: 'FILE', help: "the eval log to fill (Ringer's runs.jsonl too)", default: '<home>/runs.jsonl' },
      'runs-dir': {
        type: 'string',
        value: 'DIR',
        help: "where run states are: <DIR>/<run_id>/state.json or Ringer's <DIR>/<run_id>.json",
        default: '<home>/runs',
      },
      'dry-run': { type: 'boolean', help: 'print what would change, write nothing' },
      json,
      home,
    },
    summary: "fill old eval rows' missing task_type (mapping) and model (run state); the chain is recomputed",
    exit: '0 done or nothing to do, 2 bad input: no --mapping, no log, a mapping of the wrong shape',
    run: async ({ flags }, io) =>
      (await import('./backfill-command')).backfillCommand(
        { home: resolveHome(flags.home), log: flags.log, runsDir: flags['runs-dir'], mapping: flags.mapping, dryRun: flags['dry-run'], json: flags.json },
        io,
      ),
  }),
  command({
    name: 'verify-log',
    args: [],
    flags: {
      log: { type: 'string', value: 'FILE', help: 'check this eval log (its heads are read from beside it)', default: '<home>/runs.jsonl' },
      pg: { type: 'boolean', help: 'also check every row of swarm_runs in Postgres (VERDICT_PG_URL, postgres_url) against this log' },
      'mine-only': { type: 'boolean', help: "with --pg: every row must be this home's (a machine alone, a pool's orchestrator)" },
      json,
      home,
      config,
    },
    summary: "check the eval log's hash chains (and its Postgres copy): the first row edited, removed or added",
    exit: '0 intact, 1 tampered (the first bad row: line, run_id/task_key, attempt), 2 bad input (no log, no database)',
    run: async ({ flags }, io) =>
      (await import('./verify-log-command')).verifyLogCommand(
        { log: flags.log, home: flags.home, json: flags.json, pg: flags.pg, mineOnly: flags['mine-only'], config: flags.config },
        io,
      ),
  }),
  command({
    name: 'archive',
    args: [{ name: 'RUN_ID' }],
    flags: {
      out: { type: 'string', value: 'FILE', help: 'the archive to write (never overwritten)', default: './verdict-<run_id>.tar' },
      json,
      home,
    },
    summary: "one tar of a run's evidence; its SHA-256 manifest's hash recorded in archives.jsonl",
    exit: '0 written, 2 bad input (no such run, --out exists, a git error)',
    run: async ({ args: [runId], flags }, io) =>
      (await import('./archive-command')).archiveCommand(runId as string, { home: flags.home, out: flags.out, json: flags.json }, io),
  }),
  command({
    name: 'verify-archive',
    args: [{ name: 'FILE' }],
    flags: { json, home },
    summary: 'check an archive against its SHA256SUMS and the hash recorded for it',
    exit: '0 intact, 1 tampered (or recorded in no archives.jsonl of this home), 2 not a Verdict archive',
    run: async ({ args: [file], flags }, io) =>
      (await import('./verify-archive-command')).verifyArchiveCommand(file as string, { home: flags.home, json: flags.json }, io),
  }),
];
