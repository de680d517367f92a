import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { appendEvalRow } from '../../extension/core/store/eval-log';
import type { EvalRow } from '../../extension/core/store/eval-row';
import { PostgresMirror, readPostgresChainHeads, syncToPostgres } from '../../extension/core/store/postgres';
import { chainHeadPath, readChainHeads } from '../../extension/core/store/chain';
import { verifyEvalLog } from '../../extension/core/store/verify-log';
import { loadScoreboard } from '../../extension/core/scoreboard/load';
import { verifySwarmRuns, type PgVerification } from '../../extension/core/store/pg-verify';
import { rowKey } from '../../extension/core/store/postgres';
import { toIndexRow } from '../../extension/core/store/index-row';
import { ATTEMPT_COLUMNS } from '../../extension/core/store/sqlite-index';
import { rowHash } from '../../extension/core/store/chain';
import { tempDir } from '../helpers/fixtures';
import { postgresBinDir, TestPostgres } from '../helpers/postgres';

function evalRow(run: string, key: string, attempt: number, verdict: EvalRow['verdict'], model: string): EvalRow {
  return {
    run_id: run,
    task_key: key,
    spec: 's',
    worker_engine: 'script',
    verdict,
    duration_ms: 10 * attempt,
    worker_tokens: 100,
    model,
    task_type: 'pg',
    retry: attempt > 1,
    identity: 'me',
    notes: '',
    attempt,
    harness: 'script',
    lab: null,
    reported_model: null,
    access_plan: null,
    reasoning_effort: null,
    sandbox: 'bwrap',
    tokens_in: 50,
    tokens_out: 50,
    tokens_cached: null,
    tokens_reasoning: null,
    cost_microusd: 7,
    check_exit_code: 0,
    check_output: '',
    worker_exit_code: 0,
    run_name: 'pg',
    host: 'h',
    started_at: '2026-01-01T00:00:00Z',
    ended_at: '2026-01-01T00:00:01Z',
    branch: null,
    commit: null,
    prompt_path: '',
    worker_log: '',
    check_log: '',
    receipt_path: '',
    prev_hash: null,
    sealed: null,
    step: 'work',
    group: null,
    candidate: null,
  };
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
      console.log("    skipped: no PostgreSQL binaries (/usr/lib/postgresql/*/bin); .ci/run installs Debian's postgresql");
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

  it("verdict models --pg aggregates every machine's rows", async () => {
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
    assert.ok(
      v.findings.some((f) => f.kind === 'cut' && /Postgres verdict_chain_heads records 3 rows for host hc, the log has 2/.test(f.message)),
      JSON.stringify(v.findings),
    );
  });

  it("review rows land beside their attempt's work row, each once, in a table made before the step columns; --pg keeps them out of the attempts", async () => {
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    try {
      // swarm_runs as the previous version made it (no step, reviewer, review_verdict), with one row in it.
      await c.query('DROP TABLE swarm_runs');
      await c.query(`CREATE TABLE swarm_runs (row_key TEXT PRIMARY KEY, run_id TEXT NOT NULL, task_key TEXT NOT NULL, attempt INTEGER, ord BIGINT NOT NULL, model TEXT, task_type TEXT NOT NULL,
        engine TEXT NOT NULL, harness TEXT, lab TEXT, reported_model TEXT, access_plan TEXT, reasoning_effort TEXT, verdict TEXT NOT NULL, duration_ms DOUBLE PRECISION, tokens BIGINT, cost_microusd BIGINT, ended_at TEXT,
        identity TEXT, host TEXT, format TEXT NOT NULL, row JSONB NOT NULL, inserted_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
      await c.query(
        `INSERT INTO swarm_runs (row_key, run_id, task_key, attempt, ord, model, task_type, engine, verdict, format, row) VALUES ('old/t/1', 'old', 't', 1, 1, 'm9', 'pg', 'script', 'PASS', 'verdict', '{}')`,
      );
      const home = tempDir();
      const log = path.join(home, 'runs.jsonl');
      const review = (attempt: number, reviewer: number, verdict: 'approve' | 'changes' | null): EvalRow => ({
        ...evalRow('run-r', 'k', attempt, verdict === 'approve' ? 'PASS' : verdict ? 'FAIL' : 'ERROR', `rev${reviewer}`),
        worker_engine: 'claude',
        step: 'review',
        review: { reviewer, verdict, concerns: verdict === 'changes' ? ['x'] : [] },
      });
      await appendEvalRow(log, evalRow('run-r', 'k', 1, 'FAIL', 'm4'));
      await appendEvalRow(log, review(1, 1, 'changes'));
      await appendEvalRow(log, review(1, 2, null));
      await appendEvalRow(log, evalRow('run-r', 'k', 2, 'PASS', 'm4'));
      await appendEvalRow(log, review(2, 1, 'approve'));
      const sent = await syncToPostgres(home, server.url);
      assert.deepEqual([sent.sent, sent.inserted], [5, 5]);
      assert.deepEqual(await keys(server.url), ['old/t/1', 'run-r/k/1', 'run-r/k/1/review/1', 'run-r/k/1/review/2', 'run-r/k/2', 'run-r/k/2/review/1']);
      const cols = (
        await c.query("SELECT row_key, step, reviewer, review_verdict FROM swarm_runs WHERE row_key LIKE 'old/%' OR row_key LIKE 'run-r/k/1%' ORDER BY row_key")
      ).rows;
      assert.deepEqual(
        cols.map((r: Record<string, unknown>) => [r.row_key, r.step, r.reviewer, r.review_verdict]),
        [
          ['old/t/1', 'work', null, null],
          ['run-r/k/1', 'work', null, null],
          ['run-r/k/1/review/1', 'review', 1, 'changes'],
          ['run-r/k/1/review/2', 'review', 2, null],
        ],
      );
      const { view } = await loadScoreboard({ home, postgresUrl: server.url });
      const m4 = view.rows.find((r) => r.model === 'm4');
      assert.deepEqual([m4?.tasks, m4?.attempts, m4?.passed, m4?.first_try], [1, 2, 1, 0]);
      assert.ok(!view.rows.some((r) => r.model?.startsWith('rev')), 'a reviewer is not credited with attempts');
      assert.deepEqual(
        view.reviews.map((r) => [r.model, r.reviews, r.approve, r.changes, r.errors]),
        [
          ['rev1', 2, 1, 1, 0],
          ['rev2', 1, 0, 0, 1],
        ],
      );
    } finally {
      await c.end();
    }
  });

  describe('row hashes in swarm_runs (each test its own database)', () => {
    let n = 0;
    /** A fresh database on the server: its URL. */
    async function freshDb(): Promise<string> {
      const c = new pg.Client({ connectionString: server.url });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE rows${++n}`);
      } finally {
        await c.end();
      }
      return server.url.replace(/\/postgres$/, `/rows${n}`);
    }
    async function sql(url: string, text: string, params: unknown[] = []): Promise<pg.QueryResult> {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        return await c.query(text, params);
      } finally {
        await c.end();
      }
    }
    /** A home with `rows` logged (host h) and sent to `url`. */
    async function homeWith(url: string, rows: EvalRow[]): Promise<{ home: string; log: string }> {
      const home = tempDir();
      const log = path.join(home, 'runs.jsonl');
      for (const r of rows) await appendEvalRow(log, r);
      await syncToPostgres(home, url);
      return { home, log };
    }
    const verify = async (url: string, home: string, depth: 'full' | 'columns' = 'full'): Promise<PgVerification> =>
      (await verifySwarmRuns(url, { logFile: path.join(home, 'runs.jsonl'), home, depth })).report;
    const kinds = (v: PgVerification) => v.findings.map((f) => [f.kind, f.row_key]);

    it("each row keeps row_hash (the chain's hash of the row), prev_hash and log_id; an untouched table verifies at both depths", async () => {
      const url = await freshDb();
      const { home, log } = await homeWith(url, [
        evalRow('run-h', 'a', 1, 'FAIL', 'mh'),
        evalRow('run-h', 'a', 2, 'PASS', 'mh'),
        { ...evalRow('run-h', 'b', 1, 'PASS', 'mh'), cost_microusd: 9_007_199_254_740_991 },
      ]);
      const logged = fs
        .readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const got = (await sql(url, 'SELECT row_key, row_hash, prev_hash, log_id FROM swarm_runs ORDER BY row_key')).rows;
      assert.deepEqual(
        got.map((r: Record<string, unknown>) => [r.row_key, r.row_hash, r.prev_hash, r.log_id]),
        [
          ['run-h/a/1', rowHash(logged[0]), null, readChainHeads(log)?.log_id],
          ['run-h/a/2', rowHash(logged[1]), rowHash(logged[0]), readChainHeads(log)?.log_id],
          ['run-h/b/1', rowHash(logged[2]), rowHash(logged[1]), readChainHeads(log)?.log_id],
        ],
      );
      for (const depth of ['full', 'columns'] as const) {
        const v = await verify(url, home, depth);
        assert.equal(v.intact, true, JSON.stringify(v.findings));
        assert.deepEqual([v.rows, v.mine, v.sent], [3, 3, 3]);
      }
    });

    it('a row with a NUL and an unpaired surrogate reaches swarm_runs (row_text keeps it exact) and verifies; rows after it are not held up', async () => {
      const url = await freshDb();
      const odd = { ...evalRow('run-o', 'a', 1, 'FAIL', 'mo'), check_output: 'a\u0000b \ud800 c', notes: 'x\udc00' };
      const { home, log } = await homeWith(url, [odd, evalRow('run-o', 'b', 1, 'PASS', 'mo')]);
      const got = (await sql(url, "SELECT row_key, row->>'check_output' AS shown, row_text FROM swarm_runs ORDER BY row_key")).rows as {
        row_key: string;
        shown: string;
        row_text: string | null;
      }[];
      assert.deepEqual(
        got.map((r) => r.row_key),
        ['run-o/a/1', 'run-o/b/1'],
      );
      assert.equal(got[0]?.shown, 'a\ufffdb \ufffd c');
      assert.equal(got[0]?.row_text, fs.readFileSync(log, 'utf8').split('\n')[0]);
      assert.equal(got[1]?.row_text, null, 'an ordinary row is kept as JSONB only');
      for (const depth of ['full', 'columns'] as const) assert.equal((await verify(url, home, depth)).intact, true);
    });

    it('a table filled by a Verdict before row_hash: the next sync fills the hashes of its own rows; a row edited before that stays unhashed and is a finding', async () => {
      const url = await freshDb();
      const home = tempDir();
      const log = path.join(home, 'runs.jsonl');
      const rows = [evalRow('run-m', 'a', 1, 'FAIL', 'mm'), evalRow('run-m', 'b', 1, 'PASS', 'mm'), evalRow('run-m', 'c', 1, 'FAIL', 'mm')];
      for (const r of rows) await appendEvalRow(log, r);
      // swarm_runs as the previous version made and filled it, and its cursor (no `hashed`; no `forced` or `outvoted` column either).
      const OLD_COLUMNS = ATTEMPT_COLUMNS.filter((c) => c !== 'forced' && c !== 'outvoted');
      await sql(
        url,
        `CREATE TABLE swarm_runs (row_key TEXT PRIMARY KEY, run_id TEXT NOT NULL, task_key TEXT NOT NULL, attempt INTEGER, ord BIGINT NOT NULL, model TEXT, task_type TEXT NOT NULL,
        engine TEXT NOT NULL, harness TEXT, lab TEXT, reported_model TEXT, access_plan TEXT, reasoning_effort TEXT, verdict TEXT NOT NULL, duration_ms DOUBLE PRECISION, tokens BIGINT, cost_microusd BIGINT, ended_at TEXT,
        identity TEXT, host TEXT, format TEXT NOT NULL, row JSONB NOT NULL, inserted_at TIMESTAMPTZ NOT NULL DEFAULT now(), step TEXT NOT NULL DEFAULT 'work', reviewer INTEGER, review_verdict TEXT, group_key TEXT, candidate INTEGER)`,
      );
      const lines = fs.readFileSync(log, 'utf8').trim().split('\n');
      for (const [i, text] of lines.entries()) {
        const row = toIndexRow(JSON.parse(text), i + 1);
        await sql(
          url,
          `INSERT INTO swarm_runs (row_key, ${OLD_COLUMNS.join(', ')}, row) VALUES ($1, ${OLD_COLUMNS.map((_, j) => `$${j + 2}`).join(', ')}, $${OLD_COLUMNS.length + 2})`,
          [rowKey(row, text), ...OLD_COLUMNS.map((c) => row[c]), text],
        );
      }
      fs.writeFileSync(
        path.join(home, 'postgres-outbox.json'),
        JSON.stringify({ target: crypto.createHash('sha256').update(url).digest('hex'), offset: fs.statSync(log).size, lines: 3 }),
      );
      // Edited while nothing could tell: c's FAIL made a PASS, in its row and its column.
      await sql(url, `UPDATE swarm_runs SET verdict = 'PASS', row = jsonb_set(row, '{verdict}', '"PASS"') WHERE row_key = 'run-m/c/1'`);
      const sent = await syncToPostgres(home, url);
      assert.deepEqual([sent.sent, sent.inserted], [3, 0], 'sent again to fill the hashes, nothing inserted twice');
      const got = (await sql(url, 'SELECT row_key, row_hash FROM swarm_runs ORDER BY row_key')).rows as { row_key: string; row_hash: string | null }[];
      assert.deepEqual(
        got.map((r) => [r.row_key, r.row_hash]),
        [
          ['run-m/a/1', rowHash(JSON.parse(lines[0] as string))],
          ['run-m/b/1', rowHash(JSON.parse(lines[1] as string))],
          ['run-m/c/1', null],
        ],
      );
      const v = await verify(url, home);
      assert.deepEqual(kinds(v), [['unhashed', 'run-m/c/1']]);
      assert.deepEqual(v.rejected, ['run-m/c/1']);
      // The scoreboard leaves it out: mm has a FAIL and a PASS, not two PASSes.
      const { view, source } = await loadScoreboard({ home, postgresUrl: url });
      assert.equal(source.verification?.intact, false);
      assert.deepEqual(
        view.rows.filter((r) => r.model === 'mm').map((r) => [r.tasks, r.passed]),
        [[2, 1]],
      );
      // The cursor now says hashed: the next sync sends nothing again.
      assert.deepEqual(await syncToPostgres(home, url), { inserted: 0, sent: 0, corrupt: 0 });
    });

    it("another machine's rows: links and verdict_chain_heads find a row deleted in the middle or at the end, the last row edited, a row added after it", async () => {
      const url = await freshDb();
      const other = (h: string, k: string, v: EvalRow['verdict']) => ({ ...evalRow('run-x', k, 1, v, 'mx'), host: h });
      await homeWith(url, [other('hx', 'a', 'PASS'), other('hx', 'b', 'FAIL'), other('hx', 'c', 'FAIL'), other('hx', 'd', 'PASS')]);
      const { home } = await homeWith(url, [evalRow('run-y', 'a', 1, 'PASS', 'my')]);
      const clean = await verify(url, home);
      assert.equal(clean.intact, true, JSON.stringify(clean.findings));
      assert.deepEqual(
        clean.others.map((o) => [o.host, o.rows, o.head_rows]),
        [['hx', 4, 4]],
      );
      await sql(url, 'CREATE TABLE saved AS SELECT * FROM swarm_runs');
      const restore = () => sql(url, 'DELETE FROM swarm_runs; INSERT INTO swarm_runs SELECT * FROM saved');

      await sql(url, "DELETE FROM swarm_runs WHERE row_key = 'run-x/b/1'");
      assert.deepEqual(kinds(await verify(url, home)), [['broken', 'run-x/c/1']]);
      await restore();
      await sql(url, "DELETE FROM swarm_runs WHERE row_key = 'run-x/d/1'");
      assert.deepEqual(
        (await verify(url, home)).findings.map((f) => f.kind),
        ['cut'],
      );
      await restore();
      // The last row (no row after it to link to it) edited with its hash recomputed.
      const d = (await sql(url, "SELECT row FROM swarm_runs WHERE row_key = 'run-x/c/1'")).rows[0].row as Record<string, unknown>;
      const forged = { ...d, verdict: 'PASS' };
      await sql(url, "UPDATE swarm_runs SET verdict = 'PASS', row = $1, row_hash = $2 WHERE row_key = 'run-x/c/1'", [JSON.stringify(forged), rowHash(forged)]);
      assert.deepEqual(kinds(await verify(url, home)), [['broken', 'run-x/d/1']], 'the row after it no longer links to it');
      await restore();
      const last = (await sql(url, "SELECT row, row_hash FROM swarm_runs WHERE row_key = 'run-x/d/1'")).rows[0] as {
        row: Record<string, unknown>;
        row_hash: string;
      };
      const edited = { ...last.row, verdict: 'FAIL' };
      await sql(url, "UPDATE swarm_runs SET verdict = 'FAIL', row = $1, row_hash = $2 WHERE row_key = 'run-x/d/1'", [JSON.stringify(edited), rowHash(edited)]);
      assert.deepEqual(kinds(await verify(url, home)), [['head-mismatch', 'run-x/d/1']]);
      await restore();
      const extra = { ...last.row, task_key: 'e', prev_hash: last.row_hash };
      await sql(
        url,
        `INSERT INTO swarm_runs SELECT 'run-x/e/1', run_id, 'e', attempt, ord, model, task_type, engine, harness, lab, reported_model, access_plan, reasoning_effort, verdict, duration_ms, tokens, cost_microusd, ended_at, identity, host, format, $1::jsonb, inserted_at, step, reviewer, review_verdict, group_key, candidate, $2, $3, log_id, NULL FROM swarm_runs WHERE row_key = 'run-x/d/1'`,
        [JSON.stringify(extra), rowHash(extra), last.row_hash],
      );
      const beyond = await verify(url, home);
      assert.deepEqual(kinds(beyond), [['beyond-head', 'run-x/e/1']]);
      assert.deepEqual(beyond.rejected, ['run-x/e/1']);
    });

    it("two rows of one log under one key (two critics' rows of an attempt) both land, the second as <key>#<hash>; both verify", async () => {
      const url = await freshDb();
      const critic = (n: number): EvalRow => ({
        ...evalRow('run-k', 'k', 1, 'PASS', `critic${n}`),
        worker_engine: 'claude',
        step: 'critique',
        critique: { critic: n, round: 1, verified: 0, dropped: 0, criticisms: [] },
      });
      const { home, log } = await homeWith(url, [evalRow('run-k', 'k', 1, 'PASS', 'mk'), critic(1), critic(2), evalRow('run-k', 'j', 1, 'PASS', 'mk')]);
      const second = rowHash(JSON.parse(fs.readFileSync(log, 'utf8').split('\n')[2] as string));
      assert.deepEqual(await keys(url), ['run-k/j/1', 'run-k/k/1', 'run-k/k/1/critique/0', `run-k/k/1/critique/0#${second.slice(0, 16)}`]);
      const v = await verify(url, home);
      assert.equal(v.intact, true, JSON.stringify(v.findings));
      // Its chain in Postgres has no gap, so the heads there count every row.
      const local = readChainHeads(log);
      assert.deepEqual(await readPostgresChainHeads(url, local?.log_id as string), local?.chains);
      // Sent again from byte 0: nothing lands twice.
      fs.rmSync(path.join(home, 'postgres-outbox.json'));
      assert.deepEqual(await syncToPostgres(home, url), { inserted: 0, sent: 4, corrupt: 0 });
    });

    it("full depth reads each row whole: an edit of a row's JSON that keeps its columns is found there, not by the scoreboard's columns depth", async () => {
      const url = await freshDb();
      const { home } = await homeWith(url, [evalRow('run-f', 'a', 1, 'FAIL', 'mf')]);
      await sql(url, `UPDATE swarm_runs SET row = jsonb_set(row, '{check_output}', '"all tests passed"')`);
      assert.deepEqual(kinds(await verify(url, home, 'full')), [['row-edited', 'run-f/a/1']]);
      assert.equal((await verify(url, home, 'columns')).intact, true, 'the columns the scoreboard counts are as logged');
    });
  });
});
