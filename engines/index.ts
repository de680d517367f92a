/**
 * The registry of worker engines: the built-in ones and those defined in configuration. Pure TypeScript
 * (no vscode); the supervisor in extension/core spawns what an engine describes.
 */
import type { EngineSpec } from './types';
import { codexEngine } from './codex';
import { claudeEngine } from './claude';
import { opencodeEngine } from './opencode';
import { geminiEngine } from './gemini';
import { grokEngine } from './grok';
import { scriptEngine } from './script';
import { customEngineFromConfig } from './custom';

export { expandArgv, templateProblems, type ArgvValues, type TemplateProblem } from './argv';
export { findBinary } from './find-binary';
export { customEngineFromConfig, customEngineProblems, type CustomEngineConfig, type EngineEntryProblem } from './custom';
export * from './types';

/** The built-in engines by name: codex, claude, opencode, gemini, grok, script. A fresh Map on every call. */
export function builtinEngines(): Map<string, EngineSpec> {
  const engines = [codexEngine, claudeEngine, opencodeEngine, geminiEngine, grokEngine, scriptEngine];
  return new Map(engines.map((engine) => [engine.name, engine]));
}

/**
 * The engines a run can use: the built-ins plus the custom entries of a configuration (`{name: entry}`, see
 * schemas/engine.schema.json). A custom entry with a built-in's name replaces that built-in.
 * @param customConfig the configuration's engines object; absent means built-ins only.
 * @param where the file the configuration came from, named in error messages (default "engine configuration").
 * @throws Error naming `where` and the field path when an entry is invalid (see customEngineFromConfig).
 */
export function resolveEngines(customConfig?: Record<string, unknown>, where = 'engine configuration'): Map<string, EngineSpec> {
  const engines = builtinEngines();
  for (const [name, entry] of Object.entries(customConfig ?? {})) {
    engines.set(name, customEngineFromConfig(name, entry, where));
  }
  return engines;
}
