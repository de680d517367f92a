import * as vscode from 'vscode';

/** The `verdict.*` settings (contributes.configuration in package.json), read fresh on every call. */
export interface VerdictSettings {
  /** VERDICT_HOME override; undefined → $VERDICT_HOME or ~/.verdict. */
  home: string | undefined;
  identity: string | undefined;
  /** Custom engines by name (schemas/engine.schema.json). */
  engines: Record<string, unknown>;
  allowFullAccess: boolean;
  /** Default max_parallel when a manifest gives none. */
  maxParallel: number | undefined;
  /** Postgres connection string for the shared eval table (`verdict.eval.postgres`); VERDICT_PG_URL wins. */
  postgresUrl: string | undefined;
}

/** Reads the settings. */
export function readSettings(): VerdictSettings {
  const c = vscode.workspace.getConfiguration('verdict');
  return {
    home: c.get<string>('home') || undefined,
    identity: c.get<string>('identity') || undefined,
    engines: c.get<Record<string, unknown>>('engines') ?? {},
    allowFullAccess: c.get<boolean>('allowFullAccess') === true,
    maxParallel: c.get<number>('maxParallel') || undefined,
    postgresUrl: c.get<string>('eval.postgres') || undefined,
  };
}
