import { loadUserConfig, postgresUrlOf } from '../core/config/config';
import { loadScoreboard } from '../core/scoreboard/load';
import type { ScoreboardFilters, ScoreboardView } from '../core/scoreboard/view';
import { formatUsd } from '../core/cost/pricing';
import { InputError, UsageError, type Io } from './io';
import { seconds } from './format';

/** Flags of `verdict models`. */
export interface ModelsFlags {
  home: string;
  explore: boolean;
  filters: ScoreboardFilters;
  log?: string;
  json: boolean;
  /** Postgres URL for --pg (VERDICT_PG_URL or the config's postgres_url); undefined without --pg. */
  pg?: string | null;
}

const pct = (r: number | null) => (r === null ? '-' : `${Math.round(r * 100)}%`);
const opt = (n: number | null, f: (n: number) => string = String) => (n === null ? '-' : f(n));

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [head, ...rows].map((r) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** The scoreboard as text: tiers, then errors and quarantine apart, then untested suggestions. */
export function scoreboardText(v: ScoreboardView): string[] {
  const out: string[] = [];
  if (v.rows.length) {
    out.push(
      ...table(
        ['tier', 'model', 'task_type', 'tasks', 'attempts', 'pass', 'first-try', 'won', 'outvoted', 'med time', 'med tokens', 'med cost', 'last seen'],
        v.rows.map((r) => [
          r.tier,
          r.model,
          r.task_type ?? '-',
          String(r.tasks),
          String(r.attempts),
          pct(r.pass_rate),
          pct(r.first_try_pass_rate),
          r.groups ? `${r.won}/${r.groups}` : '-',
          r.groups ? String(r.lost_consensus) : '-',
          opt(r.median_duration_ms, seconds),
          opt(r.median_tokens, (n) => String(Math.round(n))),
          opt(r.median_cost_microusd, formatUsd),
          r.last_seen?.slice(0, 10) ?? '-',
        ]),
      ),
    );
  } else {
    // Name only what follows: the demo's script engine stamps no model, so its attempts are all quarantined.
    const below = [v.errors.length ? 'engine errors and rate limits' : '', v.quarantined.length ? 'attempts with no stamped model' : ''].filter(Boolean);
    out.push(`no judged attempts of any model match (PASS, FAIL and TIMEOUT count)${below.length ? `; below: ${below.join(', and ')}` : ''}`);
  }
  if (v.errors.length) {
    out.push('', 'kept out of the rates (engine errors and rate limits):');
    out.push(
      ...table(
        ['model', 'task_type', 'errors', 'rate limits', 'engines'],
        v.errors.map((e) => [e.model ?? '(no model)', e.task_type ?? '-', String(e.errors), String(e.rate_limits), e.engines.join(',')]),
      ).map((l) => `  ${l}`),
    );
  }
  if (v.reviews.length) {
    out.push('', 'reviews (rows with step review, per reviewing model; not attempts: never in the rates above):');
    out.push(
      ...table(
        ['model', 'reviews', 'approve', 'changes', 'reject', 'error', 'engines', 'last seen'],
        v.reviews.map((r) => [
          r.model ?? '(no model)',
          String(r.reviews),
          String(r.approve),
          String(r.changes),
          String(r.reject),
          String(r.errors),
          r.engines.join(','),
          r.last_seen?.slice(0, 10) ?? '-',
        ]),
      ).map((l) => `  ${l}`),
    );
  }
  if (v.quarantined.length) {
    out.push('', `quarantined: ${v.totals.quarantined_attempts} attempt(s) with no stamped model (not credited to any model):`);
    out.push(...v.quarantined.map((q) => `  task_type ${q.task_type ?? '-'}: ${q.tasks} task(s), ${q.passed} passed, engines ${q.engines.join(',')}`));
  }
  if (v.untested.length) {
    out.push('', 'untested (from the catalog: text→text, ≥ 32k context, free first, then cheapest):');
    out.push(
      ...table(
        ['model', 'context', '$/Mtok in', '$/Mtok out'],
        v.untested.map((u) => [
          u.model,
          String(u.context_length),
          u.free ? 'free' : String(u.prompt_microusd_per_token),
          u.free ? 'free' : String(u.completion_microusd_per_token),
        ]),
      ).map((l) => `  ${l}`),
    );
  }
  return out;
}

/**
 * `verdict models`: the scoreboard of the eval log (or of every machine with --pg). Prints text or, with --json,
 * `{view: ScoreboardView, source: ScoreboardSource}`. With --pg the table is checked first (store/pg-verify.ts): rows
 * proven edited, forged or unverifiable are left out, and a table that fails is said on stderr in capitals, whatever
 * the format.
 * @returns 0 shown; 1 shown, but swarm_runs failed verification (the figures leave its rejected rows out, and rows
 *   deleted from it cannot be counted); bad flags throw UsageError (exit 2)
 */
export async function modelsCommand(flags: ModelsFlags, io: Io): Promise<number> {
  if (flags.filters.since && Number.isNaN(Date.parse(flags.filters.since)))
    throw new UsageError(`--since: "${flags.filters.since}" is not a date (use YYYY-MM-DD or ISO 8601)`);
  if (flags.pg === null) throw new InputError('--pg needs a database: set VERDICT_PG_URL or postgres_url in the config file');
  const { view, source } = await loadScoreboard({
    home: flags.home,
    logFile: flags.log,
    filters: flags.filters,
    explore: flags.explore,
    postgresUrl: flags.pg,
  });
  const failed = source.verification && !source.verification.intact ? source.verification : null;
  if (failed) {
    io.err(
      `postgres: swarm_runs FAILED verification: ${failed.findings} finding(s); ${failed.rejected} row(s) proven edited, forged or unverifiable are left out of these figures, and rows deleted from it are not counted. First: ${failed.first}`,
    );
    io.err('postgres: run `verdict verify-log --pg` for every finding; the figures below are not the evidence as logged');
  }
  if (flags.json) {
    io.out(JSON.stringify({ view, source }, null, 2));
    return failed ? 1 : 0;
  }
  for (const l of scoreboardText(view)) io.out(l);
  io.out('');
  io.out(`${source.rows} attempt(s) from ${source.from}`);
  if (source.forced) io.out(`${source.forced} row(s) of runs started over lint errors (--force) left out: a forced run is not evidence`);
  if (source.corrupt) {
    const first = source.corruptSamples[0];
    io.err(`${source.corrupt} corrupt line(s) skipped${first ? ` (first: ${source.from}:${first.line}: ${first.reason})` : ''}`);
  }
  if (source.outboxError) io.err(`postgres: this machine's newest rows could not be sent first (${source.outboxError}); they wait in the outbox`);
  return failed ? 1 : 0;
}

/**
 * The database of `verdict models --pg`: $VERDICT_PG_URL, else the postgres_url of the config file in force
 * (`configPath` > $VERDICT_CONFIG > the default file, see loadUserConfig); null when neither.
 * @throws InputError naming the config file and field when it is malformed, or the file $VERDICT_CONFIG names is missing
 */
export function postgresUrlFor(configPath: string | undefined, env: NodeJS.ProcessEnv = process.env): string | null {
  try {
    return postgresUrlOf(loadUserConfig(configPath, env).config, env);
  } catch (e) {
    throw new InputError((e as Error).message);
  }
}
