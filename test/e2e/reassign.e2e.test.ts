import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// Moving work off an exhausted engine (docs/engines.md "Quota waits"): a task with `fallback` engines whose engine is
// rate-limited (HTTP 429) or waits for its usage limit runs its next attempt on its next fallback engine at once,
// spending no attempt on the wait; `on_quota: "wait"` keeps today's wait. Fake engines print Claude Code's JSON (its
// error result carries the 429 or the usage limit), each with WHO in its environment so one script tells them apart.

const env = { ...process.env, VERDICT_PG_URL: '' } as Record<string, string>;
const OK = `echo ok > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5}}'`;
/** Claude Code's error result for a used-up usage limit resetting `inS` seconds from now. */
const quota = (inS: number) => `echo '{"type":"result","is_error":true,"result":"Claude AI usage limit reached|'$(( $(date +%s) + ${inS} ))'"}'; exit 1`;
const RATE_LIMITED = `echo '{"type":"result","is_error":true,"api_error_status":429,"result":"API Error: 429 rate_limit_error"}'; exit 1`;

function config(dir: string): string {
  const file = path.join(dir, 'config.json');
  const engine = (who: string) => ({
    binary: 'bash',
    argv: ['-c', '{spec}'],
    install: 'a test fixture',
    output: 'claude',
    retry_context: 'file',
    model: `acme/${who}`,
    env: { WHO: who },
  });
  fs.writeFileSync(file, JSON.stringify({ engines: { lim: engine('lim'), rl: engine('rl'), spare: engine('spare') } }));
  return file;
}

describe('reassign: a task moves off a rate-limited or waiting engine to its fallback at once (e2e, built CLI)', () => {
  it('a 429 and a usage limit move tasks with fallback to the next engine at once (reassigned_from in the row); on_quota "wait" waits for the reset', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const check = 'test -s out.txt || { echo "out.txt missing"; exit 1; }';
    const RESET_S = 20;
    const tasks = [
      // Its engine answers 429 (rl, once per task dir); max_attempts 1: only a move reaches its fallback.
      scriptTask('r', `if [ "$WHO" = rl ] && [ ! -e .rl-once ]; then touch .rl-once; ${RATE_LIMITED}; fi; ${OK}`, check, {
        engine: 'rl',
        fallback: ['spare'],
        max_attempts: 1,
      }),
      // Its engine reports its usage limit, resetting in RESET_S s: the engine waits from then on.
      scriptTask('q', `if [ "$WHO" = lim ]; then ${quota(RESET_S)}; fi; ${OK}`, check, { engine: 'lim', fallback: ['spare'], max_attempts: 1 }),
      // Start once lim waits: `later` moves off it before any attempt on it; `patient` (on_quota "wait") waits.
      scriptTask('later', `if [ "$WHO" = lim ]; then ${quota(RESET_S)}; fi; ${OK}`, check, {
        engine: 'lim',
        fallback: ['spare'],
        max_attempts: 1,
        after: ['q'],
      }),
      scriptTask('patient', OK, check, { engine: 'lim', fallback: ['spare'], on_quota: 'wait', after: ['q'] }),
    ];
    const manifest = writeManifest(dir, { run_name: 'reassign', max_parallel: 4, workdir: path.join(dir, 'work'), tasks });
    const started = Date.now();
    const r = await cli(['run', manifest, '--home', home, '--config', config(dir), '--no-dashboard'], { env });
    const rows = readRows(home);
    const at = (x: Record<string, unknown>) => ((Date.parse(x.started_at as string) - started) / 1000).toFixed(1);
    console.log(
      `      ${rows.map((x) => `${x.task_key as string} on ${x.worker_engine as string} ${x.verdict as string} at +${at(x)} s${x.reassigned_from ? ` (from ${x.reassigned_from as string})` : ''}`).join('; ')}`,
    );
    assert.equal(r.exitCode, 0, r.all);
    const of = (k: string) => rows.filter((x) => x.task_key === k).map((x) => [x.worker_engine, x.verdict, x.reassigned_from ?? null]);
    assert.deepEqual(
      of('r'),
      [
        ['rl', 'RATE_LIMITED', null],
        ['spare', 'PASS', 'rl'],
      ],
      r.all,
    );
    assert.deepEqual(
      of('q'),
      [
        ['lim', 'RATE_LIMITED', null],
        ['spare', 'PASS', 'lim'],
      ],
      r.all,
    );
    assert.deepEqual(of('later'), [['spare', 'PASS', 'lim']], 'no attempt spent on the waiting engine');
    assert.deepEqual(of('patient'), [['lim', 'PASS', null]], 'on_quota "wait" stays on its engine');
    // The moves happen at once: well before the reset; the patient task only after it.
    const moved = rows.filter((x) => x.reassigned_from);
    const reset = Date.parse(rows.find((x) => x.task_key === 'q')?.started_at as string) + RESET_S * 1000;
    for (const x of moved) assert.ok(Date.parse(x.started_at as string) < reset - 10_000, `${x.task_key as string} moved at once (+${at(x)} s)`);
    assert.ok(Date.parse(rows.find((x) => x.task_key === 'patient')?.started_at as string) >= reset - 1500, 'patient waited for the reset');
    assert.match(r.all, /engine rl was rate-limited: r's next attempt runs on spare\/acme\/spare at once/);
    assert.match(r.all, /engine lim waits for its quota until [\d: -]+: later's next attempt runs on spare/);
  });

  it('on_quota is checked at load: an unknown value is an error at its position', async () => {
    const dir = tempDir();
    const manifest = writeManifest(dir, {
      run_name: 'bad',
      workdir: path.join(dir, 'work'),
      tasks: [scriptTask('a', 'echo ok > out.txt', 'test -s out.txt || { echo "out.txt missing"; exit 1; }', { on_quota: 'retry', expect_files: ['out.txt'] })],
    });
    const r = await cli(['run', manifest, '--home', path.join(dir, 'home')], { env });
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: tasks\[0\]\.on_quota/);
    assert.equal(fs.existsSync(path.join(dir, 'home', 'runs')), false, 'nothing ran');
  });
});
