import assert from 'node:assert/strict';
import path from 'node:path';
import pg from 'pg';
import { rowHash } from '../../extension/core/store/chain';
import { cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { postgresBinDir, TestPostgres } from '../helpers/postgres';

/**
 * The Postgres copy of the evidence edited by someone who can write the database (a pool worker machine has its URL):
 * `verdict verify-log --pg` must find every UPDATE, DELETE and INSERT of swarm_runs against this home's own log and
 * heads, and `verdict models --pg` must not count what it finds.
 */
describe('hostile: the Postgres copy of the evidence edited (built CLI, a real PostgreSQL)', function () {
  this.timeout(300_000);
  const bin = postgresBinDir();
  let server: TestPostgres;
  let n = 0;

  before(async function () {
    if (!bin) {
      console.log('    skipped: no PostgreSQL binaries (/usr/lib/postgresql/*/bin)');
      this.skip();
    }
    server = await TestPostgres.create(bin as string);
  });
  after(() => server?.stop());

  /** A fresh database and home, and a run of two tasks in it: `good` PASSes, `bad` FAILs once (max_attempts 1). */
  async function runInto(badCheck = 'echo "no out.txt"; exit 1'): Promise<{ url: string; home: string; env: Record<string, string> }> {
    const db = `evidence${++n}`;
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${db}`);
    await admin.end();
    const url = server.url.replace(/\/postgres$/, `/${db}`);
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const env = { ...process.env, VERDICT_PG_URL: url } as Record<string, string>;
    const manifest = writeManifest(dir, {
      run_name: 'pg-evidence',
      workdir: path.join(dir, 'work'),
      max_parallel: 1,
      tasks: [
        scriptTask('good', 'echo ok > out.txt', 'test -s out.txt', { model: 'acme/m1', max_attempts: 1 }),
        scriptTask('bad', 'true', badCheck, { model: 'acme/m1', max_attempts: 1 }),
      ],
    });
    const r = await cli(['run', manifest, '--home', home, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 1, r.all);
    assert.deepEqual(
      readRows(home).map((x) => [x.task_key, x.verdict]),
      [
        ['good', 'PASS'],
        ['bad', 'FAIL'],
      ],
    );
    return { url, home, env };
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

  /** `verdict models --pg --json`'s m1 row: [tasks, passed]. */
  async function m1(home: string, env: Record<string, string>): Promise<{ exit: number | undefined; counts: number[]; stderr: string }> {
    const r = await cli(['models', '--pg', '--home', home, '--json'], { env });
    const view = (JSON.parse(r.stdout) as { view: { rows: { model: string; tasks: number; passed: number }[] } }).view;
    const row = view.rows.find((x) => x.model === 'acme/m1');
    return { exit: r.exitCode, counts: [row?.tasks ?? 0, row?.passed ?? 0], stderr: r.stderr };
  }

  it('an untouched table verifies: verify-log --pg exit 0, models --pg counts 1 of 2 passed', async () => {
    const { home, env } = await runInto();
    const v = await cli(['verify-log', '--pg', '--home', home], { env });
    assert.equal(v.exitCode, 0, v.all);
    assert.match(v.stdout, /swarm_runs: 2 rows, 2 of them this home's/);
    assert.match(v.stdout, /intact/);
    const m = await m1(home, env);
    assert.equal(m.exit, 0, m.stderr);
    assert.deepEqual(m.counts, [2, 1]);
  });

  it("UPDATE swarm_runs SET verdict='PASS' on the FAIL row: verify-log --pg names it, models --pg leaves it out and warns", async () => {
    const { url, home, env } = await runInto();
    const u = await sql(url, "UPDATE swarm_runs SET verdict = 'PASS' WHERE verdict = 'FAIL'");
    assert.equal(u.rowCount, 1);
    const v = await cli(['verify-log', '--pg', '--home', home], { env });
    assert.equal(v.exitCode, 1, v.all);
    assert.match(v.stdout, /TAMPERED: .*bad attempt 1.*verdict is PASS in swarm_runs.*FAIL/);
    const m = await m1(home, env);
    assert.equal(m.exit, 1);
    assert.deepEqual(m.counts, [1, 1], 'the edited row is not counted as a pass');
    assert.match(m.stderr, /swarm_runs FAILED verification.*1 row.*left out.*verify-log --pg/s);
  });

  it('the row itself edited too, with its row_hash recomputed: found (the row is not one this home logged)', async () => {
    const { url, home, env } = await runInto();
    const row = (await sql(url, "SELECT row FROM swarm_runs WHERE verdict = 'FAIL'")).rows[0].row as Record<string, unknown>;
    const forged = { ...row, verdict: 'PASS', check_exit_code: 0 };
    await sql(url, "UPDATE swarm_runs SET verdict = 'PASS', row = $1, row_hash = $2 WHERE verdict = 'FAIL'", [JSON.stringify(forged), rowHash(forged)]);
    const v = await cli(['verify-log', '--pg', '--home', home, '--json'], { env });
    assert.equal(v.exitCode, 1, v.all);
    const report = JSON.parse(v.stdout) as { postgres: { findings: { kind: string; row_key: string; line: number | null }[] } };
    const kinds = report.postgres.findings.map((f) => f.kind);
    assert.ok(kinds.includes('forged') && kinds.includes('missing'), JSON.stringify(report.postgres.findings));
    assert.equal(report.postgres.findings[0]?.line, 2, 'the first finding is line 2 of runs.jsonl, the FAIL row');
    const m = await m1(home, env);
    assert.equal(m.exit, 1);
    assert.deepEqual(m.counts, [1, 1]);
  });

  it('DELETE of the FAIL row: found, naming the line of runs.jsonl it came from', async () => {
    const { url, home, env } = await runInto();
    assert.equal((await sql(url, "DELETE FROM swarm_runs WHERE verdict = 'FAIL'")).rowCount, 1);
    const v = await cli(['verify-log', '--pg', '--home', home], { env });
    assert.equal(v.exitCode, 1, v.all);
    assert.match(v.stdout, /TAMPERED: line 2 of .*runs\.jsonl \(.*bad attempt 1\) was sent to swarm_runs and is not there/);
    const m = await m1(home, env);
    assert.equal(m.exit, 1);
    assert.match(m.stderr, /swarm_runs FAILED verification/);
  });

  /**
   * Inserts a copy of the row `where` selects with `changes` made to its eval row, every column filled as the outbox
   * would fill it (the row_key, the scoreboard columns, row_hash of the changed row): a careful forger's INSERT.
   */
  async function forge(url: string, where: string, changes: Record<string, unknown>, columns: Record<string, unknown>): Promise<void> {
    const base = (await sql(url, `SELECT * FROM swarm_runs WHERE ${where}`)).rows[0] as Record<string, unknown>;
    const row = { ...(base.row as Record<string, unknown>), ...changes };
    const all: Record<string, unknown> = { ...base, ...columns, row: JSON.stringify(row), row_hash: rowHash(row), prev_hash: row.prev_hash ?? null };
    delete all.inserted_at;
    const names = Object.keys(all);
    await sql(
      url,
      `INSERT INTO swarm_runs (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
      names.map((n) => all[n]),
    );
  }

  it("INSERT of a forged PASS row (hashed, chained after the last row, under this home's log): found and not counted", async () => {
    const { url, home, env } = await runInto();
    const last = (await sql(url, "SELECT row_key, run_id, row_hash FROM swarm_runs WHERE verdict = 'FAIL'")).rows[0] as {
      row_key: string;
      run_id: string;
      row_hash: string;
    };
    await forge(
      url,
      "verdict = 'FAIL'",
      { task_key: 'extra', verdict: 'PASS', check_exit_code: 0, prev_hash: last.row_hash },
      { row_key: `${last.run_id}/extra/1`, task_key: 'extra', verdict: 'PASS' },
    );
    const v = await cli(['verify-log', '--pg', '--home', home], { env });
    assert.equal(v.exitCode, 1, v.all);
    assert.match(v.stdout, /TAMPERED: .*extra attempt 1.*not a row of this home's log/);
    const m = await m1(home, env);
    assert.equal(m.exit, 1);
    assert.deepEqual(m.counts, [2, 1], 'the forged PASS is not counted');
  });

  it("INSERT of a forged row claiming another machine's log (no head for it anywhere): found and not counted", async () => {
    const { url, home, env } = await runInto();
    const runId = '20260101-000000-beef';
    await forge(
      url,
      "verdict = 'PASS'",
      { run_id: runId, host: 'elsewhere', prev_hash: null },
      { row_key: `${runId}/good/1`, run_id: runId, host: 'elsewhere', log_id: 'not-a-log' },
    );
    const v = await cli(['verify-log', '--pg', '--home', home], { env });
    assert.equal(v.exitCode, 1, v.all);
    assert.match(v.stdout, /TAMPERED: .*good attempt 1.*host elsewhere.*no head in verdict_chain_heads/);
    const m = await m1(home, env);
    assert.equal(m.exit, 1);
    assert.deepEqual(m.counts, [2, 1], 'the forged PASS is not counted');
    // Where this home writes every row (a machine alone, a pool's orchestrator), any other log's row is a finding.
    const mine = await cli(['verify-log', '--pg', '--mine-only', '--home', home], { env });
    assert.equal(mine.exitCode, 1, mine.all);
    assert.match(mine.stdout, /TAMPERED: .*good attempt 1.*not a row of this home's log, and this home writes every row/);
  });

  it('a check that prints a NUL byte does not stop the mirror: its row reaches swarm_runs and verifies', async () => {
    // Postgres' JSONB refuses \u0000: before, that row's batch failed on every sync and every later row waited in the
    // outbox for ever (a worker's tests can print anything).
    const { url, home, env } = await runInto(`printf 'a\\0b\\n'; exit 1`);
    const rows = readRows(home);
    assert.match(String(rows[1]?.check_output), /a\u0000b/);
    const keys = (await sql(url, 'SELECT row_key FROM swarm_runs ORDER BY row_key')).rows.map((r: { row_key: string }) => r.row_key);
    assert.equal(keys.length, 2, 'both rows reached Postgres');
    const v = await cli(['verify-log', '--pg', '--home', home], { env });
    assert.equal(v.exitCode, 0, v.all);
    const m = await m1(home, env);
    assert.deepEqual(m.counts, [2, 1]);
  });
});
