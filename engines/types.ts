/**
 * The contract every worker engine module fulfils. Pure TypeScript: no vscode, no process spawning here;
 * the supervisor in extension/core/process spawns what an engine describes.
 */
import type { QuotaEvent } from './quota-reset';

/**
 * One element of an argv template. A string may contain the placeholders `{spec}` (the full prompt given to
 * the worker, one argv element, never passed through a shell), `{taskdir}` (absolute task directory),
 * `{model}` (the model id) and `{engine_args}` (must stand alone: replaced by zero or more elements).
 * An array is an optional group: it is kept only when every placeholder inside it has a value (so
 * `["-m", "{model}"]` disappears when no model is set).
 */
export type ArgvTemplateElement = string | string[];

/** The final status the engine itself reported in its structured output. */
export type EngineFinalStatus = 'success' | 'error';

/**
 * What an engine's structured output says about one worker run. Every number is a count of tokens summed over
 * the whole run; a field the CLI did not report is null, never 0 (unknown is not zero).
 */
export interface UsageReport {
  tokensIn: number | null;
  tokensOut: number | null;
  /** Input tokens served from the provider's prompt cache (a subset of tokensIn where the CLI reports it so). */
  tokensCached: number | null;
  /**
   * Input tokens written to the provider's prompt cache (a subset of tokensIn: Claude Code's cache_creation_input_tokens,
   * opencode's cache.write, each added into tokensIn by its parser); null when the CLI does not report them.
   */
  tokensCacheWrite: number | null;
  /** Reasoning tokens (a subset of tokensOut where the CLI reports it so). */
  tokensReasoning: number | null;
  /** Cost as the CLI reported it, in micro-USD (1 USD = 1,000,000), integer; null when the CLI gives none. */
  costMicroUsd: number | null;
  /** The model id the CLI says answered (may differ from the requested one); null when not reported. */
  reportedModel: string | null;
  /** The engine's own final event: success, error, or null when no final event was seen. */
  finalStatus: EngineFinalStatus | null;
  /** The error text the final event carried, if any. */
  finalError: string | null;
}

/** Why an engine run failed, as far as its output tells. */
export type EngineErrorClass = 'rate_limit' | 'auth' | 'engine_error';

/** A worker engine: how to start it headless and how to read what it printed. */
export interface EngineSpec {
  /** Engine name used in manifests (`engine` field), e.g. "codex". */
  name: string;
  /** The harness that runs the model, recorded in eval rows (e.g. "codex-cli", "claude-code", "script"). */
  harness: string;
  /** Executable looked up on PATH before any task starts. */
  binary: string;
  /** One line telling a user how to install the binary; shown when it is missing. */
  install: string;
  /** argv after the binary, see {@link ArgvTemplateElement}. */
  argv: ArgvTemplateElement[];
  /** Extra argv inserted where the template says `{access}`: for tasks with `full_access: true`. */
  fullAccessArgv: string[];
  /** Extra argv inserted where the template says `{access}`: for ordinary tasks (workspace-write sandbox). */
  sandboxArgv: string[];
  /**
   * Added after sandboxArgv when the worker runs inside Verdict's sandbox, where / (and so /tmp) is read-only: what the
   * engine's own sandbox needs to start there (codex: leave /tmp out of its writable roots; $TMPDIR is writable).
   */
  nestedSandboxArgv: string[];
  /**
   * Replaces sandboxArgv and nestedSandboxArgv when the worker runs inside Verdict's sandbox and Verdict runs as root:
   * its steps then have no capability (sandbox.ts `--cap-drop ALL`), and a sandbox of the engine's own made of user
   * namespaces cannot start there (mapping uid 0 needs CAP_SETFCAP; bubblewrap started by root covers /proc/irq and
   * /proc/bus, so no nested /proc can be mounted). Verdict's sandbox alone then contains the worker. Absent: unchanged.
   */
  rootNestedArgv?: string[];
  /** Environment variables added to the worker's environment (the parent environment is inherited). */
  env: Record<string, string>;
  /**
   * The inherited environment variables holding the engine's own credentials (its API keys): the only ones that look
   * like credentials (core/process/secrets.ts looksLikeCredential) a step of this engine keeps — every other sandboxed
   * step, its check included, gets none. A variable here that names a credentials file (GOOGLE_APPLICATION_CREDENTIALS)
   * also leaves that file readable to this engine's steps. Sources: each CLI's documentation. Absent: none.
   */
  credentialEnv?: string[];
  /**
   * Folders the CLI must write outside the task dir (logins, sessions, caches), writable inside the sandbox; created
   * when missing. Templates: `~/…`, `${VAR:-fallback}`, `$VAR` (see expandStatePath); an entry whose variable is
   * unset and has no fallback is skipped.
   */
  stateDirs: string[];
  /**
   * State files the CLI replaces by rename in a folder that must stay read-only (claude's `~/.claude.json` in $HOME):
   * the sandbox gives the worker a private writable copy; its changes are dropped when the attempt ends.
   */
  stateFiles: string[];
  /**
   * Paths inside the state dirs that the user's own, unsandboxed sessions of this CLI obey (settings with hooks,
   * instructions, agents, commands): a worker may not leave them changed or created; they are put back after the work
   * step (run/state-guard.ts). Same templates as stateDirs.
   */
  stateGuarded: string[];
  /**
   * Whether a change to a guarded file (`file`, its text `before` and `after` the step; null where absent) is one the
   * CLI makes itself on every start, not the worker's: returns what the CLI did, in words for the task's notes, or null.
   * The file is put back either way; only the note differs. Absent: every change is taken as the worker's.
   */
  ownRewrite?: (file: string, before: string | null, after: string | null) => string | null;
  /**
   * Paths inside the state dirs that a read-only reader (reviewer, critic, ranking reviewer, a task with `inputs`)
   * shares with every other run: the login (credential files), the user's settings, caches that hold no session. Such
   * a reader sees each state dir as its own empty folder with only these bound back (read-write, so a token refresh is
   * saved), never the sessions, histories and logs other runs left there (a codex ranker could otherwise read which
   * candidate is whose from codex's session logs). A state dir named here itself is shared whole. Same templates as
   * stateDirs; a path that does not exist is skipped.
   */
  stateShared: string[];
  /** Model used when the task names none; null when the CLI picks its own default. */
  defaultModel: string | null;
  /**
   * How a retry's failure context reaches the worker: `prompt` appends it to `{spec}`;
   * `file` keeps `{spec}` as the task's spec and only writes VERDICT_FAILURE_FILE (the script engine).
   */
  retryContext: 'prompt' | 'file';
  /**
   * The `type` values of the JSON events the CLI prints, as far as Verdict was tested with it
   * (engines/tested-versions.ts): an event of another type is an "unknown event" — its line stays in the worker log,
   * parseOutput reads on past it, and the attempt says so once in the task's notes (run/steps/work.ts). Absent: not
   * checked.
   */
  eventTypes?: readonly string[];
  /** Reads the whole raw worker log (stdout+stderr interleaved) and returns what it reports. Never throws. */
  parseOutput(log: string): UsageReport;
  /**
   * The usage a still-running worker has reported so far, read from its log as it grows (the budget's spend is
   * updated from it while the attempt runs: run/usage-meter.ts). Only for an engine that reports usage as it streams
   * (opencode: one `step_finish` per model call; Claude Code: each assistant message's `usage`); absent for one that
   * reports it only at its end (codex's one `turn.completed`), whose spend counts when the attempt ends. A figure
   * here never decides the attempt's recorded cost: parseOutput does, once it ended. Never throws.
   */
  streamUsage?(log: string): UsageReport;
  /**
   * The most one attempt on this engine is expected to cost, micro-USD (a custom engine's `max_attempt_usd`): what the
   * budget reserves before an attempt when the eval log has no p90 for its model and task type. Absent: not known.
   */
  maxAttemptMicroUsd?: number;
  /**
   * The most tokens one attempt on this engine is expected to use (a custom engine's `max_attempt_tokens`): what
   * budget_tokens reserves when the eval log has no p90 of tokens and the task sets none. Absent: not known.
   */
  maxAttemptTokens?: number;
  /**
   * True when the usage's tokensCached is part of tokensIn (codex's cached_input_tokens, gemini's cached, opencode's
   * cache.read and Claude Code's cache_read_input_tokens once added back): the cached part is then priced at the
   * catalog's cache-read price and the rest at the prompt price (cost/pricing.ts). Absent or false: cached input is not
   * priced apart, all of tokensIn at the prompt price.
   */
  cachedInInput?: boolean;
  /**
   * How many attempts on this engine may run at once on this machine, across every run (a custom engine's
   * `max_parallel`; run/slots.ts). Absent: no limit beyond each run's own.
   */
  maxParallel?: number;
  /** Classifies a failed run from the tail of its log; null when nothing recognisable. Never throws. */
  classifyError(logTail: string): EngineErrorClass | null;
  /**
   * The quota reset the engine's own structured error event reports in the whole raw log of a run that ended
   * RATE_LIMITED on its own (engines/quota-reset.ts; the engine waits until then, run/quota-wait.ts): the one final
   * event of a one-turn CLI (codex turn.failed, claude's and gemini's error result), or opencode's error event that
   * ended its run with an HTTP 429 and its reset headers. Null when that event names no reset, or the log holds no such
   * event or two final events. Text the worker controls — plain lines, tool output, the agent's own messages, JSON
   * events written into the engine's stdout — is never read. `now` epoch ms. Absent (script, grok, custom engines
   * with output "none": no structured error event): the engine never waits for a quota. Never throws.
   */
  quotaReset?(log: string, now: number): QuotaEvent | null;
  /**
   * The text of the engine's final answer (its last assistant message) read from the whole raw log, or null when the
   * log holds none (the run failed, or was cut off before answering). Read by the review step (a reviewer answers in
   * its final message). Never throws.
   */
  finalMessage(log: string): string | null;
}

/** A usage report with nothing known. */
export function emptyUsage(): UsageReport {
  return {
    tokensIn: null,
    tokensOut: null,
    tokensCached: null,
    tokensCacheWrite: null,
    tokensReasoning: null,
    costMicroUsd: null,
    reportedModel: null,
    finalStatus: null,
    finalError: null,
  };
}
