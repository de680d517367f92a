import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { slotsLine } from '../../schemas/protocol';
import { LogTail } from '../../extension/core/dashboard/log-tail';
import { browserSession } from '../helpers/dashboard-session';
import { DashboardSource, slotGroupViews } from '../../extension/core/dashboard/source';
import { slotsDir, takeSlots } from '../../extension/core/run/slots';
import { parsePageMessage, parsePageMessageText } from '../../extension/core/dashboard/validate';
import type { RunState } from '../../extension/core/live/state';
import { tempDir } from '../helpers/fixtures';

const quiet = () => {
  const lines: string[] = [];
  return { lines, info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
};

function writeRun(home: string, runId: string, attemptDir: string): void {
  const state: RunState = {
    version: 1,
    runId,
    runName: `run ${runId}`,
    manifestFile: '/x.swarm.json',
    identity: 'me',
    host: 'h',
    pid: process.pid,
    status: 'running',
    startedAt: Date.now(),
    heartbeatAt: Date.now(),
    endedAt: null,
    maxParallel: 1,
    worktrees: false,
    repo: null,
    baseRef: null,
    baseSha: null,
    tasks: [
      {
        key: 'k',
        engine: 'script',
        model: null,
        taskType: null,
        verified: null,
        status: 'running',
        dir: '/tmp',
        branch: null,
        commit: null,
        port: null,
        attempts: [
          {
            attempt: 1,
            phase: 'running',
            verdict: null,
            startedAt: Date.now(),
            endedAt: null,
            workerPid: 1,
            tokensIn: null,
            tokensOut: null,
            costMicroUsd: null,
            checkExitCode: null,
            dir: attemptDir,
            notes: '',
          },
        ],
      },
    ],
  };
  fs.mkdirSync(path.join(home, 'runs', runId), { recursive: true });
  fs.writeFileSync(path.join(home, 'runs', runId, 'state.json'), JSON.stringify(state));
}

describe('dashboard: page messages are validated', () => {
  it('accepts each known message', () => {
    for (const m of [
      { type: 'ready' },
      { type: 'select-run', runId: null },
      { type: 'select-run', runId: '2026-x_1' },
      { type: 'load-scoreboard', seq: 3 },
      { type: 'load-artifact', seq: 1, runId: 'r', artifact: 'manifest' },
      { type: 'load-artifact', seq: 2, runId: 'r', artifact: 'check-output', key: 'k.1', attempt: 2 },
    ]) {
      assert.deepEqual(parsePageMessage(m), { ok: true, message: m });
    }
  });

  it('rejects unknown types, extra or missing fields, unsafe ids and malformed JSON, saying why', () => {
    const bad: [unknown, RegExp][] = [
      [null, /not a JSON object/],
      [[{ type: 'ready' }], /not a JSON object/],
      [{ type: 'rm-rf' }, /unknown message type "rm-rf"/],
      [{ type: 'ready', extra: 1 }, /additional|extra/],
      [{ type: 'select-run' }, /runId/],
      [{ type: 'select-run', runId: '../etc' }, /runId/],
      [{ type: 'load-artifact', seq: 1, runId: 'r', artifact: 'prompt' }, /key|attempt/],
      [{ type: 'load-artifact', seq: 1, runId: 'r', artifact: 'shadow' }, /artifact/],
      [{ type: 'load-artifact', seq: 1, runId: 'r', artifact: 'prompt', key: '..', attempt: 1 }, /key/],
    ];
    for (const [m, why] of bad) {
      const r = parsePageMessage(m);
      assert.equal(r.ok, false, JSON.stringify(m));
      if (!r.ok) assert.match(r.reason, why);
    }
    const r = parsePageMessageText('{"type":');
    assert.ok(!r.ok && /malformed JSON/.test(r.reason));
    const big = parsePageMessageText(JSON.stringify({ type: 'ready', pad: 'x'.repeat(20000) }));
    assert.ok(!big.ok && /larger than/.test(big.reason));
  });
});

describe('dashboard: LogTail reads a growing log with bounded reads', () => {
  it('returns what was appended, at most the ring, and says when bytes were dropped', () => {
    const file = path.join(tempDir(), 'worker.log');
    const tail = new LogTail(file, 16);
    assert.equal(tail.read(), null, 'no file yet');
    fs.writeFileSync(file, 'one\n');
    assert.deepEqual(tail.read(), { text: 'one\n', reset: true, totalBytes: 4 });
    assert.equal(tail.read(), null, 'nothing new');
    fs.appendFileSync(file, 'two\n');
    assert.deepEqual(tail.read(), { text: 'two\n', reset: false, totalBytes: 8 });
    fs.appendFileSync(file, 'x'.repeat(1000) + 'END\n');
    const flood = tail.read();
    assert.equal(flood?.reset, true);
    assert.equal(flood?.text, 'x'.repeat(12) + 'END\n');
  });

  it('keeps a multi-byte character cut at the end for the next read', () => {
    const file = path.join(tempDir(), 'worker.log');
    const tail = new LogTail(file, 1024);
    const euro = Buffer.from('€');
    fs.writeFileSync(file, Buffer.concat([Buffer.from('a'), euro.subarray(0, 2)]));
    assert.equal(tail.read()?.text, 'a');
    fs.appendFileSync(file, Buffer.concat([euro.subarray(2), Buffer.from('b')]));
    assert.equal(tail.read()?.text, '€b');
  });
});

describe('dashboard: a session', () => {
  it("posts nothing before ready, then a snapshot; rejects and logs bad messages; streams the selected run's output", async () => {
    const home = tempDir();
    const attempt = path.join(home, 'runs', 'r1', 'tasks', 'k', 'attempt-1');
    fs.mkdirSync(attempt, { recursive: true });
    fs.writeFileSync(path.join(attempt, 'worker.log'), 'hello\n');
    writeRun(home, 'r1', attempt);
    fs.mkdirSync(path.join(home, 'runs', 'broken'));
    fs.writeFileSync(path.join(home, 'runs', 'broken', 'state.json'), '{"version":1,');
    const log = quiet();
    const source = new DashboardSource(home, log);
    const { session, posted } = browserSession(source, log);
    try {
      assert.equal(session.receive({ type: 'select-run', runId: 'r1' }), false);
      assert.equal(posted.length, 0, 'nothing before ready');
      assert.equal(session.receive({ type: 'ready' }), true);
      const snap = posted[0];
      assert.ok(snap?.type === 'snapshot');
      assert.deepEqual(
        snap.runs.map((r) => r.runId),
        ['r1'],
      );
      assert.equal(snap.skipped[0]?.runId, 'broken');
      assert.match(log.lines.join('\n'), /skipped runs\/broken\/state\.json: corrupt or half-written JSON/);
      assert.equal(JSON.stringify(snap).includes(attempt), false, 'no local paths reach the page');

      assert.equal(session.receive({ type: 'nope' }), false);
      assert.match(log.lines.at(-1) ?? '', /rejected a message from the page: unknown message type "nope"/);
      assert.deepEqual(posted.at(-1), { type: 'did-reject', reason: 'unknown message type "nope"' });

      session.receive({ type: 'select-run', runId: 'r1' });
      const out = posted.filter((m) => m.type === 'did-append-output');
      assert.deepEqual(out, [{ type: 'did-append-output', runId: 'r1', chunks: [{ key: 'k', attempt: 1, text: 'hello\n', reset: true, totalBytes: 6 }] }]);

      session.receive({ type: 'load-artifact', seq: 7, runId: 'r1', artifact: 'worker-log', key: 'k', attempt: 1 });
      assert.deepEqual(posted.at(-1), {
        type: 'did-load-artifact',
        replyTo: 7,
        runId: 'r1',
        artifact: 'worker-log',
        key: 'k',
        attempt: 1,
        text: 'hello\n',
        truncatedBytes: 0,
        error: null,
      });
      session.receive({ type: 'load-artifact', seq: 8, runId: 'r1', artifact: 'prompt', key: 'k', attempt: 9 });
      assert.equal((posted.at(-1) as { error: string }).error, 'no such attempt');
    } finally {
      session.dispose();
      source.close();
    }
  });
});

describe('dashboard: the machine-wide slots in use (engine max_parallel, logins)', () => {
  /** Waits for the session's next flushes until `done` holds; no time limit but mocha's. */
  const flushed = async (done: () => boolean) => {
    while (!done()) await new Promise((r) => setTimeout(r, 20));
  };

  it('slotGroupViews: every limited group with its live holders, engines then logins; a dead run holds nothing; one line each', async () => {
    const home = tempDir();
    assert.deepEqual(slotGroupViews(home), [], 'no slot folder: none');
    const codex = { group: 'engine-codex', limit: 3, label: 'engine codex' };
    const sub = { group: 'login-openai-plus', limit: 1, label: 'login openai-plus' };
    const a = await takeSlots(home, [codex, sub], { runId: 'r1', task: 'a', engine: 'codex' });
    const b = await takeSlots(home, [codex], { runId: 'r2', task: 'b', engine: 'codex' });
    assert.ok(a && b);
    // A holder whose orchestrator is gone (a pid no process has) is not counted.
    const file = path.join(slotsDir(home), 'engine-codex.json');
    const table = JSON.parse(fs.readFileSync(file, 'utf8')) as { limit: number; holders: Record<string, unknown>[] };
    table.holders.push({ ...table.holders[0], id: 'dead', runId: 'r0', pid: 2 ** 22 + 1, startTime: 'gone', task: 'z' });
    fs.writeFileSync(file, JSON.stringify(table));
    const views = slotGroupViews(home);
    assert.deepEqual(
      views.map((v) => [v.group, v.kind, v.name, v.inUse, v.limit, v.holders.map((h) => `${h.runId}/${h.task}/${h.engine}`)]),
      [
        ['engine-codex', 'engine', 'codex', 2, 3, ['r1/a/codex', 'r2/b/codex']],
        ['login-openai-plus', 'login', 'openai-plus', 1, 1, ['r1/a/codex']],
      ],
    );
    assert.deepEqual(views.map(slotsLine), ['codex: 2 of 3 slots', 'login openai-plus: 1 of 1 slot']);
    await a();
    assert.deepEqual(slotGroupViews(home).map(slotsLine), ['codex: 1 of 3 slots', 'login openai-plus: 0 of 1 slot']);
    await b();
  });

  it('are in the snapshot, and a change reaches the page as did-change-slots within a liveness tick', async () => {
    const home = tempDir();
    const codex = { group: 'engine-codex', limit: 2, label: 'engine codex' };
    const first = await takeSlots(home, [codex], { runId: 'r1', task: 'a', engine: 'codex' });
    const log = quiet();
    const source = new DashboardSource(home, log);
    const { session, posted } = browserSession(source, log);
    try {
      session.receive({ type: 'ready' });
      const snap = posted[0];
      assert.ok(snap?.type === 'snapshot');
      assert.deepEqual(snap.slots?.map(slotsLine), ['codex: 1 of 2 slots']);
      // The slot tables are not under runs/: the liveness tick (LIVENESS_TICK_MS) reads them.
      const second = await takeSlots(home, [codex], { runId: 'r2', task: 'b', engine: 'codex' });
      await flushed(() => posted.some((m) => m.type === 'did-change-slots'));
      const change = posted.find((m) => m.type === 'did-change-slots');
      assert.ok(change?.type === 'did-change-slots');
      assert.deepEqual(change.slots.map(slotsLine), ['codex: 2 of 2 slots']);
      await second?.();
      await first?.();
      await flushed(() => posted.filter((m) => m.type === 'did-change-slots').length === 2);
      const last = posted.filter((m) => m.type === 'did-change-slots').at(-1);
      assert.ok(last?.type === 'did-change-slots');
      assert.deepEqual(last.slots.map(slotsLine), ['codex: 0 of 2 slots']);
    } finally {
      session.dispose();
      source.close();
    }
  });
});
