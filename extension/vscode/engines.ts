import type * as vscode from 'vscode';
import type { EngineSpec } from '../../engines/types';
import { builtinEngines, resolveEngines } from '../../engines';
import { readSettings } from './settings';

/**
 * The engines the editor uses: built-ins plus the config file's engines (Verdict's, over Ringer's config.toml) plus
 * `verdict.engines` (readSettings). A bad setting is logged once per distinct error and
 * the built-ins are used, so a typo in settings never breaks diagnostics.
 */
export function editorEngines(log: vscode.LogOutputChannel): ReadonlyMap<string, EngineSpec> {
  try {
    return resolveEngines(readSettings().engines, "settings: verdict.engines (over the config file's engines)");
  } catch (e) {
    const message = (e as Error).message;
    if (message !== lastError) log.error(message);
    lastError = message;
    return builtinEngines();
  }
}
let lastError = '';
