/**
 * The script engine: the task's spec is a bash script and no model is involved (no key, no tokens). Used for
 * deterministic workers, demos and tests. On a retry the spec stays the same script; the runner sets
 * VERDICT_ATTEMPT (1-based) and VERDICT_FAILURE_FILE (a file holding the previous attempt's log tail and check
 * output) so the script can read them. Its final message (what a reviewer answers) is its last non-empty output line.
 * A script's output is never classified: all of it is the worker's own (the script is the worker), so nothing in it is
 * an engine's event — no rate limit and no quota wait (a line "usage limit reached, try again in 7 days" is a line).
 * Tests that play an engine out of its quota use a custom engine whose output a structured reader reads
 * (docs/engines.md "Quota waits").
 */
import { emptyUsage, type EngineSpec, type UsageReport } from './types';
import { lastLineMessage } from './final-message';

/** A script prints no structured output: nothing is known, and there is no final event. */
export function parseScriptOutput(_log: string): UsageReport {
  return emptyUsage();
}

/** The script engine: `bash -c <spec>`. */
export const scriptEngine: EngineSpec = {
  name: 'script',
  harness: 'script',
  binary: 'bash',
  install: 'bash comes with every Linux and macOS system; on Debian: apt-get install bash',
  argv: ['-c', '{spec}'],
  fullAccessArgv: [],
  sandboxArgv: [],
  nestedSandboxArgv: [],
  env: {},
  stateDirs: [],
  stateFiles: [],
  stateGuarded: [],
  stateShared: [],
  defaultModel: null,
  retryContext: 'file',
  parseOutput: parseScriptOutput,
  // A script's final message is the last non-empty line it printed (engines/final-message.ts).
  finalMessage: lastLineMessage,
  classifyError: () => null,
};
