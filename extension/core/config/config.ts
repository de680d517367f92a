import fs from 'node:fs';
import path from 'node:path';
import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { LineIndex } from '../manifest/positions';

/** The user's Verdict config file (JSON or JSONC). Every field is optional. */
export interface VerdictConfig {
  /** Custom engines or overrides of built-ins, by name; each entry follows schemas/engine.schema.json. */
  engines?: Record<string, unknown>;
  /** Default identity (below flag, environment and .fleet-agent). */
  identity?: string;
  /** Default max_parallel when the manifest gives none. */
  max_parallel?: number;
  /** The user means it when a task sets full_access (engines run without their sandbox); the linter warns otherwise. */
  allow_full_access?: boolean;
  /** Postgres connection URL: every eval row also goes to table swarm_runs there (VERDICT_PG_URL overrides). */
  postgres_url?: string;
}

/** The Postgres URL eval rows are mirrored to: $VERDICT_PG_URL > the config's postgres_url > none (null). */
export function postgresUrlOf(config: VerdictConfig, env: NodeJS.ProcessEnv = process.env): string | null {
  return env.VERDICT_PG_URL || config.postgres_url || null;
}

/**
 * Reads a config file. Absent path → empty config.
 * @throws Error naming file:line:column for malformed JSON, or the file and field for a wrong shape
 */
export function loadConfig(file: string | null | undefined): { config: VerdictConfig; file: string | null } {
  if (!file) return { config: {}, file: null };
  const abs = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (e) {
    throw new Error(`${abs}: cannot read the config file: ${(e as Error).message}`);
  }
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true });
  if (errors[0]) {
    const pos = new LineIndex(text).position(errors[0].offset);
    throw new Error(`${abs}:${pos.line}:${pos.column}: malformed JSON (${printParseErrorCode(errors[0].error)})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${abs}: the config must be a JSON object`);
  const c = value as Record<string, unknown>;
  if (c.engines !== undefined && (typeof c.engines !== 'object' || c.engines === null || Array.isArray(c.engines))) {
    throw new Error(`${abs}: engines: must be an object of engine name → engine definition`);
  }
  if (c.identity !== undefined && typeof c.identity !== 'string') throw new Error(`${abs}: identity: must be a string`);
  if (c.max_parallel !== undefined && !(Number.isInteger(c.max_parallel) && (c.max_parallel as number) >= 1)) {
    throw new Error(`${abs}: max_parallel: must be an integer ≥ 1`);
  }
  if (c.postgres_url !== undefined && !(typeof c.postgres_url === 'string' && /^postgres(ql)?:\/\//.test(c.postgres_url))) {
    throw new Error(`${abs}: postgres_url: must be a postgres:// or postgresql:// URL`);
  }
  if (c.allow_full_access !== undefined && typeof c.allow_full_access !== 'boolean') throw new Error(`${abs}: allow_full_access: must be true or false`);
  return { config: c as VerdictConfig, file: abs };
}
