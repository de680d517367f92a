import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { appendEvalRow } from '../../extension/core/store/eval-log';
import type { EvalRow } from '../../extension/core/store/eval-row';
import { PostgresMirror, readPostgresChainHeads, syncToPostgres } from '../../extension/core/store/postgres';
import { chainHeadPath, readChainHeads } from '../../extension/core/store/chain';
import { verifyEvalLog } from '../../extension/core/store/verify-log';
import { loadScoreboard } from '../../extension/core/scoreboard/load';
import { tempDir } from '../helpers/fixtures';
import { postgresBinDir, TestPostgres } from '../helpers/postgres';

function evalRow(run: string, key: string, attempt: number, verdict: EvalRow['verdict'], model: string): EvalRow {
  return { run_id: run, task_key: key, spec: 's', worker_engine: 'script', verdict, duration_ms: 10 * attempt, worker_tokens: 100, model, task_type: 'pg', retry: attempt > 1, identity: 'me', notes: '', attempt, harness: 'script', lab: null, reported_model: null, access_plan: null, reasoning_effort: null, sandbox: 'bwrap', tokens_in: 50, tokens_out: 50, tokens_cached: null, tokens_reasoning: null, cost_microusd: 7, check_exit_code: 0, check_output: '', worker_exit_code: 0, run_name: 'pg', host: 'h', started_at: '2026-01-01T00:00:00Z', ended_at: '2026-01-01T00:00:01Z', branch: null, commit: null, prompt_path: '', worker_log: '', check_log: '', receipt_path: '', prev_hash: null, sealed: null, step: 'work', group: null, candidate: null };
}

async function keys(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query('SELECT row_key FROM swarm_runs ORDER BY row_key')).rows.map((r: { row_key: string }) => r.row_key);
  } finally {
    await c.end();
  }
}

describe('postgres mirror (unit, a real PostgreSQL on 127.0.0.1)', function () {
  this.timeout(120_000);
  const bin = postgresBinDir();
  let server: TestPostgres;

  before(async function () {
    if (!bin) {
      console.log('    skipped: no PostgreSQL binaries (/usr/lib/postgresql/*/bin); .ci/run installs Debian\'s postgresql');
      this.skip();
    }
    server = await TestPostgres.create(bin as string);
  });
  after(() => server?.stop());

  it('sends every row once through an outage in the middle: none lost, none twice', async () => {
    const home = tempDir();
    const log = path.join(home, 'runs.jsonl');
    const mirror = new PostgresMirror(home, server.url);
    for (let i = 1; i <= 3; i++) await appendEvalRow(log, evalRow('run-a', `t${i}`, 1, 'PASS', 'm1'));
    assert.equal(await mirror.flush(30_000), null);
    assert.deepEqual(await keys(server.url), ['run-a/t1/1', 'run-a/t2/1', 'run-a/t3/1']);

    server.stop();
    for (let i = 4; i <= 6; i++) {
      await appendEvalRow(log, evalRow('run-a', `t${i}`, 1, 'FAIL', 'm1'));
      mirror.kick();
    }
    await appendEvalRow(log, evalRow('run-a', 't4', 2, 'PASS', 'm1'));
    const pending = await mirror.flush(30_000);
    assert.match(String(pending), /ECONNREFUSED|connect/i, 'the outage is reported, not thrown');
    server.start();
    assert.equal(await mirror.flush(30_000), null);
    // A cursor lost after a crash: everything is sent again, and nothing lands twice.
    fs.rmSync(path.join(home, 'postgres-outbox.json'));
    const again = await syncToPostgres(home, server.url);
    assert.deepEqual([again.sent, again.inserted], [7, 0]);
    assert.deepEqual(await keys(server.url), ['run-a/t1/1', 'run-a/t2/1', 'run-a/t3/1', 'run-a/t4/1', 'run-a/t4/2', 'run-a/t5/1', 'run-a/t6/1']);
  });

  it('verdict models --pg aggregates every machine\'s rows', async () => {
    const machineB = tempDir();
    await appendEvalRow(path.join(machineB, 'runs.jsonl'), evalRow('run-b', 'x1', 1, 'PASS', 'm2'));
    await appendEvalRow(path.join(machineB, 'runs.jsonl'), evalRow('run-b', 'x2', 1, 'PASS', 'm2'));
    const { view, source } = await loadScoreboard({ home: machineB, postgresUrl: server.url });
    assert.equal(source.outboxError, null);
    const byModel = Object.fromEntries(view.rows.map((r) => [r.model, [r.tasks, r.passed, r.first_try]]));
    // m1 from the first machine: t1–t3 PASS; t4 FAIL then PASS; t5, t6 FAIL. m2 from this one.
    assert.deepEqual(byModel, { m1: [6, 4, 3], m2: [2, 2, 2] });
  });

  it('keeps each chain head in verdict_chain_heads, moved only by rows inserted; verify-log --pg sees a cut the home cannot', async () => {
    const home = tempDir();
    const log = path.join(home, 'runs.jsonl');
    for (let i = 1; i <= 4; i++) await appendEvalRow(log, { ...evalRow('run-c', `c${i}`, 1, 'PASS', 'm3'), host: i % 2 ? 'hc' : 'hd' });
    await syncToPostgres(home, server.url);
    const local = readChainHeads(log);
    assert.ok(local);
    assert.deepEqual(await readPostgresChainHeads(server.url, local.log_id), local.chains);
    // Sent again from byte 0 (cursor lost): the heads do not move twice.
    fs.rmSync(path.join(home, 'postgres-outbox.json'));
    await syncToPostgres(home, server.url);
    assert.deepEqual(await readPostgresChainHeads(server.url, local.log_id), local.chains);
    assert.equal((await verifyEvalLog(log, { pgUrl: server.url })).intact, true);
    // Rows lag in the outbox: not a finding.
    await appendEvalRow(log, { ...evalRow('run-c', 'c5', 1, 'PASS', 'm3'), host: 'hc' });
    const lag = await verifyEvalLog(log, { pgUrl: server.url });
    assert.equal(lag.intact, true, JSON.stringify(lag.findings));
    assert.match(lag.notes.join('\n'), /Postgres verdict_chain_heads has 2 of host hc's 3 rows/);
    // The last two rows cut, and the local head rewritten to match: Postgres still knows.
    await syncToPostgres(home, server.url);
    const text = fs.readFileSync(log, 'utf8').split('\n');
    fs.writeFileSync(log, text.slice(0, 3).join('\n') + '\n');
    const heads = JSON.parse(fs.readFileSync(chainHeadPath(log), 'utf8')) as { chains: Record<string, unknown>; log_bytes: number };
    heads.chains = {};
    heads.log_bytes = 0;
    fs.writeFileSync(chainHeadPath(log), JSON.stringify({ ...heads, version: 1 }));
    const v = await verifyEvalLog(log, { pgUrl: server.url });
    assert.equal(v.intact, false);
    assert.ok(v.findings.some((f) => f.kind === 'cut' && /Postgres verdict_chain_heads records 3 rows for host hc, the log has 2/.test(f.message)), JSON.stringify(v.findings));
  });

  it('review rows land beside their attempt\'s work row, each once, in a table made before the step columns; --pg keeps them out of the attempts', async () => {
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    try {
      // swarm_runs as the previous version made it (no step, reviewer, review_verdict), with one row in it.
      await c.query('DROP TABLE swarm_runs');
      await c.query(`CREATE TABLE swarm_runs (row_key TEXT PRIMARY KEY, run_id TEXT NOT NULL, task_key TEXT NOT NULL, attempt INTEGER, ord BIGINT NOT NULL, model TEXT, task_type TEXT NOT NULL,
        engine TEXT NOT NULL, harness TEXT, lab TEXT, reported_model TEXT, access_plan TEXT, reasoning_effort TEXT, verdict TEXT NOT NULL, duration_ms DOUBLE PRECISION, tokens BIGINT, cost_microusd BIGINT, ended_at TEXT,
        identity TEXT, host TEXT, format TEXT NOT NULL, row JSONB NOT NULL, inserted_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
      await c.query(`INSERT INTO swarm_runs (row_key, run_id, task_key, attempt, ord, model, task_type, engine, verdict, format, row) VALUES ('old/t/1', 'old', 't', 1, 1, 'm9', 'pg', 'script', 'PASS', 'verdict', '{}')`);
      const home = tempDir();
      const log = path.join(home, 'runs.jsonl');
      const review = (attempt: number, reviewer: number, verdict: 'approve' | 'changes' | null): EvalRow => ({ ...evalRow('run-r', 'k', attempt, verdict === 'approve' ? 'PASS' : verdict ? 'FAIL' : 'ERROR', `rev${reviewer}`), worker_engine: 'claude', step: 'review', review: { reviewer, verdict, concerns: verdict === 'changes' ? ['x'] : [] } });
      await appendEvalRow(log, evalRow('run-r', 'k', 1, 'FAIL', 'm4'));
      await appendEvalRow(log, review(1, 1, 'changes'));
      await appendEvalRow(log, review(1, 2, null));
      await appendEvalRow(log, evalRow('run-r', 'k', 2, 'PASS', 'm4'));
      await appendEvalRow(log, review(2, 1, 'approve'));
      const sent = await syncToPostgres(home, server.url);
      assert.deepEqual([sent.sent, sent.inserted], [5, 5]);
      assert.deepEqual(await keys(server.url), ['old/t/1', 'run-r/k/1', 'run-r/k/1/review/1', 'run-r/k/1/review/2', 'run-r/k/2', 'run-r/k/2/review/1']);
      const cols = (await c.query("SELECT row_key, step, reviewer, review_verdict FROM swarm_runs WHERE row_key LIKE 'old/%' OR row_key LIKE 'run-r/k/1%' ORDER BY row_key")).rows;
      assert.deepEqual(cols.map((r: Record<string, unknown>) => [r.row_key, r.step, r.reviewer, r.review_verdict]), [
        ['old/t/1', 'work', null, null],
        ['run-r/k/1', 'work', null, null],
        ['run-r/k/1/review/1', 'review', 1, 'changes'],
        ['run-r/k/1/review/2', 'review', 2, null],
      ]);
      const { view } = await loadScoreboard({ home, postgresUrl: server.url });
      const m4 = view.rows.find((r) => r.model === 'm4');
      assert.deepEqual([m4?.tasks, m4?.attempts, m4?.passed, m4?.first_try], [1, 2, 1, 0]);
      assert.ok(!view.rows.some((r) => r.model?.startsWith('rev')), 'a reviewer is not credited with attempts');
      assert.deepEqual(view.reviews.map((r) => [r.model, r.reviews, r.approve, r.changes, r.errors]), [['rev1', 2, 1, 1, 0], ['rev2', 1, 0, 0, 1]]);
    } finally {
      await c.end();
    }
  });
});
