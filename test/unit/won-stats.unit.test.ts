import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadScoreboard } from '../../extension/core/scoreboard/load';
import { dashboardScoreboard } from '../../extension/core/dashboard/scoreboard';
import { scoreboardText } from '../../extension/cli/models-command';
import { tempDir } from '../helpers/fixtures';

let clock = 0;
/** A Verdict-format eval row with the fields the scoreboard reads; ended_at increases row by row. */
function row(
  run: string,
  key: string,
  attempt: number,
  verdict: string,
  model: string,
  taskType: string,
  engine: string,
  extra: { step?: string; group?: string | null; candidate?: number | null } = {},
) {
  clock++;
  return {
    run_id: run,
    task_key: key,
    spec: 's',
    worker_engine: engine,
    verdict,
    duration_ms: 10,
    worker_tokens: 5,
    model,
    task_type: taskType,
    retry: attempt > 1,
    identity: 'me',
    notes: '',
    attempt,
    harness: engine,
    lab: null,
    reported_model: null,
    tokens_in: null,
    tokens_out: null,
    cost_microusd: null,
    ended_at: `2026-01-01T00:00:${String(clock).padStart(2, '0')}.000Z`,
    step: extra.step ?? 'work',
    group: extra.group ?? null,
    candidate: extra.candidate ?? null,
  };
}
const cand = (run: string, group: string, n: number, attempt: number, verdict: string, model: string, engine: string, taskType = 'parser') =>
  row(run, `${group}--c${n}`, attempt, verdict, model, taskType, engine, { group, candidate: n });
const select = (run: string, group: string, n: number, model: string, engine: string, taskType = 'parser') =>
  row(run, group, 1, 'PASS', model, taskType, engine, { step: 'select', group, candidate: n });

/**
 * The hand-made log, with the "won" figures computed by hand:
 * - r1 group g: alpha has c1 (FAIL) and c3 (PASS), beta c2 (PASS); beta's c2 was chosen. alpha took part once (two
 *   candidates, one group), won 0; beta 1 of 1.
 * - r2 group g: alpha c1 PASS (chosen), beta c2 FAIL then PASS. alpha 1 of 1, beta 0 of 1.
 * - r3 group h: alpha c1 FAIL, beta c2 FAIL: no select row (BLOCKED): both took part, neither won.
 * - r4 group k (task type ui): beta c1 PASS (chosen), and the select row written twice (a resumed run): counts once.
 * - r5: alpha's ordinary task t1 PASS: no group, no part in the column.
 * So alpha × parser: 1 of 3 groups; beta × parser: 1 of 3; beta × ui: 1 of 1.
 */
function handLog(): object[] {
  clock = 0;
  return [
    cand('r1', 'g', 1, 1, 'FAIL', 'lab/alpha', 'codex'),
    cand('r1', 'g', 2, 1, 'PASS', 'beta', 'opencode'),
    select('r1', 'g', 2, 'beta', 'opencode'),
    cand('r1', 'g', 3, 1, 'PASS', 'lab/alpha', 'codex'),
    cand('r2', 'g', 1, 1, 'PASS', 'lab/alpha', 'codex'),
    select('r2', 'g', 1, 'lab/alpha', 'codex'),
    cand('r2', 'g', 2, 1, 'FAIL', 'beta', 'opencode'),
    cand('r2', 'g', 2, 2, 'PASS', 'beta', 'opencode'),
    cand('r3', 'h', 1, 1, 'FAIL', 'lab/alpha', 'codex'),
    cand('r3', 'h', 2, 1, 'FAIL', 'beta', 'opencode'),
    cand('r4', 'k', 1, 1, 'PASS', 'beta', 'opencode', 'ui'),
    select('r4', 'k', 1, 'beta', 'opencode', 'ui'),
    select('r4', 'k', 1, 'beta', 'opencode', 'ui'),
    row('r5', 't1', 1, 'PASS', 'lab/alpha', 'parser', 'codex'),
  ];
}

function writeLog(home: string, rows: object[]): void {
  fs.writeFileSync(path.join(home, 'runs.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

describe('scoreboard: the "won" column (unit)', () => {
  it('counts groups taken part in and won, per (model, task type), exactly as computed by hand', async () => {
    const home = tempDir();
    writeLog(home, handLog());
    const { view, source } = await loadScoreboard({ home });
    const won = (v: typeof view) => v.rows.map((r) => [r.model, r.task_type, r.won, r.groups]).sort((a, b) => String(a).localeCompare(String(b)));
    assert.deepEqual(won(view), [
      ['beta', 'parser', 1, 3],
      ['beta', 'ui', 1, 1],
      ['lab/alpha', 'parser', 1, 3],
    ]);
    // select rows are not attempts: 10 work rows; alpha × parser has 5 tasks (r1 c1, r1 c3, r2 c1, r3 c1, t1), 3 passed.
    assert.equal(source.rows, 10);
    const alpha = view.rows.find((r) => r.model === 'lab/alpha')!;
    assert.deepEqual([alpha.tasks, alpha.attempts, alpha.passed], [5, 5, 3]);
    const beta = view.rows.find((r) => r.model === 'beta' && r.task_type === 'parser')!;
    assert.deepEqual([beta.tasks, beta.attempts, beta.passed, beta.first_try], [3, 4, 2, 1]);
    // From the cache (unchanged log), the same; filtered by engine, only that engine's groups.
    assert.deepEqual(won((await loadScoreboard({ home })).view), won(view));
    assert.deepEqual(won((await loadScoreboard({ home, filters: { engine: 'codex' } })).view), [['lab/alpha', 'parser', 1, 3]]);
    // `verdict models` prints won/groups; the dashboard's rows carry them.
    const text = scoreboardText(view).join('\n');
    assert.match(text, /\bwon\b/);
    assert.match(text, /lab\/alpha\s+parser\s+5\s+5\s+60%\s+\d+%\s+1\/3\b/);
    const dash = await dashboardScoreboard(home);
    assert.deepEqual(
      dash.rows
        .filter((r) => r.tier !== 'untested')
        .map((r) => [r.model, r.taskType, r.won, r.groups])
        .sort((a, b) => String(a).localeCompare(String(b))),
      [
        ['beta', 'parser', 1, 3],
        ['beta', 'ui', 1, 1],
        ['lab/alpha', 'parser', 1, 3],
      ],
    );
  });

  it('a model with no candidate in any group shows no groups (0 of 0), not a loss', async () => {
    const home = tempDir();
    clock = 0;
    writeLog(home, [row('r1', 't1', 1, 'PASS', 'gamma', 'parser', 'codex'), row('r1', 't2', 1, 'FAIL', 'gamma', 'parser', 'codex')]);
    const { view } = await loadScoreboard({ home });
    assert.deepEqual(
      view.rows.map((r) => [r.model, r.won, r.groups]),
      [['gamma', 0, 0]],
    );
    assert.match(scoreboardText(view).join('\n'), /gamma\s+parser\s+2\s+2\s+50%\s+50%\s+-\s/);
  });

  it("outvoted: a passing candidate in a group consensus decided against counts once per group for its model; an undecided consensus, a failed candidate or the winner's group do not", async () => {
    const home = tempDir();
    clock = 0;
    const member = (n: number, model: string, engine: string) => ({ key: `g--c${n}`, candidate: n, engine, model });
    const consensus = (decided: string, groups: ReturnType<typeof member>[][]) => ({
      inputs: 2,
      given: 2,
      groups: groups.map((g) => ({ members: g, size: g.length })),
      splitting: [],
      decided,
      tie: null,
      why: 'w',
    });
    const rows = [
      // r1: alpha c1 and c3 pass, beta c2 passes; beta and alpha c3 agree and win (c2 chosen); alpha c1 outvoted.
      cand('r1', 'g', 1, 1, 'PASS', 'alpha', 'codex'),
      cand('r1', 'g', 2, 1, 'PASS', 'beta', 'opencode'),
      cand('r1', 'g', 3, 1, 'PASS', 'alpha', 'codex'),
      {
        ...select('r1', 'g', 2, 'beta', 'opencode'),
        consensus: consensus('largest', [[member(2, 'beta', 'opencode'), member(3, 'alpha', 'codex')], [member(1, 'alpha', 'codex')]]),
      },
      // r2: consensus could not decide: no one is outvoted.
      cand('r2', 'g', 1, 1, 'PASS', 'alpha', 'codex'),
      cand('r2', 'g', 2, 1, 'PASS', 'beta', 'opencode'),
      { ...select('r2', 'g', 1, 'alpha', 'codex'), consensus: consensus('undecided', [[member(1, 'alpha', 'codex'), member(2, 'beta', 'opencode')]]) },
      // r3: a tie broken for alpha c1; beta c2 outvoted (the mask names c2; its FAIL attempt before the PASS counts nothing).
      cand('r3', 'g', 1, 1, 'PASS', 'alpha', 'codex'),
      cand('r3', 'g', 2, 1, 'FAIL', 'beta', 'opencode'),
      cand('r3', 'g', 2, 2, 'PASS', 'beta', 'opencode'),
      { ...select('r3', 'g', 1, 'alpha', 'codex'), consensus: consensus('tie-cheapest', [[member(1, 'alpha', 'codex')], [member(2, 'beta', 'opencode')]]) },
    ];
    writeLog(home, rows);
    const figures = (v: Awaited<ReturnType<typeof loadScoreboard>>['view']) =>
      v.rows.map((r) => [r.model, r.won, r.lost_consensus, r.groups]).sort((a, b) => String(a).localeCompare(String(b)));
    const expected = [
      ['alpha', 2, 1, 3],
      ['beta', 1, 1, 3],
    ];
    const first = await loadScoreboard({ home });
    assert.deepEqual(figures(first.view), expected);
    // The cache, and the columns a filter reads, agree with the index.
    assert.deepEqual(figures((await loadScoreboard({ home })).view), expected);
    assert.deepEqual(figures((await loadScoreboard({ home, filters: { since: '2000-01-01T00:00:00.000Z' } })).view), expected);
    assert.deepEqual(figures((await loadScoreboard({ home, filters: { engine: 'opencode' } })).view), [['beta', 1, 1, 3]]);
    assert.match(scoreboardText(first.view).join('\n'), /\boutvoted\b/);
    assert.match(scoreboardText(first.view).join('\n'), /alpha\s+parser\s+\d+\s+\d+\s+\d+%\s+\d+%\s+2\/3\s+1\s/);
    const dash = await dashboardScoreboard(home);
    assert.deepEqual(
      dash.rows
        .filter((r) => r.tier !== 'untested')
        .map((r) => [r.model, r.lostConsensus])
        .sort(),
      [
        ['alpha', 1],
        ['beta', 1],
      ],
    );
  });
});
