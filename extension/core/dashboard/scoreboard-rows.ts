import fs from 'node:fs';
import readline from 'node:readline';
import type { ScoreRow } from '../../../schemas/protocol';
import { evalLogPath } from '../config/home';
import type { EvalRow } from '../store/eval-row';

/** Verdicts that say nothing about the model's work (DESIGN.md "Scoreboard": shown on their own, out of the rates). */
const NOT_EVIDENCE = new Set(['ERROR', 'RATE_LIMITED', 'CANCELLED', 'INTERRUPTED']);

/**
 * A minimal scoreboard aggregated from runs.jsonl, for the dashboard until extension/core/scoreboard exists: per
 * (model, task_type) tasks, attempts, pass rate after retries, first-try pass rate, medians, last seen, and the
 * tier rule of DESIGN.md (proven: ≥ 3 tasks and first-try pass rate ≥ 0.67; otherwise probation). No catalog, so
 * no untested tier. A row that is not JSON is skipped. Resolves [] when there is no eval log.
 */
export async function scoreboardFromEvalLog(home: string): Promise<ScoreRow[]> {
  const file = evalLogPath(home);
  if (!fs.existsSync(file)) return [];
  const groups = new Map<string, EvalRow[]>();
  const lines = readline.createInterface({ input: fs.createReadStream(file, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    let row: EvalRow;
    try {
      row = JSON.parse(line) as EvalRow;
    } catch {
      continue;
    }
    if (typeof row?.run_id !== 'string') continue;
    const id = `${row.model ?? `${row.worker_engine} (default model)`}\u0000${row.task_type ?? '—'}`;
    groups.set(id, [...(groups.get(id) ?? []), row]);
  }
  return [...groups.entries()].map(([id, rows]) => scoreRow(id, rows)).sort((a, b) => tierRank(a) - tierRank(b) || (b.firstTryPassRate ?? -1) - (a.firstTryPassRate ?? -1));
}

function scoreRow(id: string, rows: EvalRow[]): ScoreRow {
  const [model = '', taskType = ''] = id.split('\u0000');
  const evidence = rows.filter((r) => !NOT_EVIDENCE.has(r.verdict));
  const tasks = new Map<string, EvalRow[]>();
  for (const r of evidence) tasks.set(`${r.run_id}/${r.task_key}`, [...(tasks.get(`${r.run_id}/${r.task_key}`) ?? []), r]);
  const all = [...tasks.values()];
  const passed = all.filter((t) => t.some((r) => r.verdict === 'PASS')).length;
  const firstTry = all.filter((t) => t.some((r) => r.attempt === 1 && r.verdict === 'PASS')).length;
  const withFirst = all.filter((t) => t.some((r) => r.attempt === 1)).length;
  const firstTryPassRate = withFirst ? firstTry / withFirst : null;
  return {
    model,
    taskType,
    tier: all.length >= 3 && (firstTryPassRate ?? 0) >= 0.67 ? 'proven' : 'probation',
    tasks: all.length,
    attempts: evidence.length,
    passRate: all.length ? passed / all.length : null,
    firstTryPassRate,
    medianDurationMs: median(evidence.map((r) => r.duration_ms)),
    medianTokens: median(evidence.map((r) => r.worker_tokens)),
    medianCostMicroUsd: median(evidence.map((r) => r.cost_microusd)),
    engineErrors: rows.filter((r) => r.verdict === 'ERROR' || r.verdict === 'RATE_LIMITED').length,
    lastSeen: rows.map((r) => r.ended_at).sort().at(-1) ?? null,
  };
}

function median(values: (number | null)[]): number | null {
  const v = values.filter((x): x is number => typeof x === 'number').sort((a, b) => a - b);
  if (!v.length) return null;
  const mid = v.length >> 1;
  return v.length % 2 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
}

function tierRank(r: ScoreRow): number {
  return r.tier === 'proven' ? 0 : r.tier === 'probation' ? 1 : 2;
}
