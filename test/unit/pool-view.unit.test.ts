import assert from 'node:assert/strict';
import { ageText, parseAttemptRef, poolLines, poolSummary, poolView, type PoolStatus, type PoolView } from '../../schemas/pool-view';
import { browserSession } from '../helpers/dashboard-session';
import { DashboardSource, type PoolFeed } from '../../extension/core/dashboard/source';
import { tempDir } from '../helpers/fixtures';

const worker = (host: string, over: Partial<PoolStatus['workers'][number]> = {}): PoolStatus['workers'][number] => ({
  workerId: `${host}-1234-abcd`,
  host,
  pid: 1234,
  slots: 2,
  engines: ['codex', 'script'],
  startedAt: 1_000,
  heartbeatAt: 9_000,
  silentMs: 400,
  state: 'live',
  running: [],
  mismatches: 0,
  ...over,
});

describe('pool view: one model for `verdict pool status`, the dashboard and the runs tree', () => {
  const status: PoolStatus = {
    workers: [
      worker('desk', { running: ['run-1/build/1', 'run-1/test.unit/2'] }),
      worker('vm', { slots: 1, engines: ['script'], running: ['run-2/docs/1'], silentMs: 61_000, state: 'lost' }),
      worker('box', { state: 'draining', running: ['run-1/lint/3'], slots: 1 }),
      worker('old', { state: 'stopped', silentMs: 7_300_000, mismatches: 2 }),
    ],
    queues: [
      { engine: 'codex', waiting: 3, running: 2 },
      { engine: 'script', waiting: 1, running: 1 },
    ],
  };

  it('parses each held attempt, counts free slots, and totals busy slots over live and draining workers only', () => {
    const v = poolView(status, { url: 'postgres://u:***@db/pool', readAt: 42 });
    assert.deepEqual(v.workers[0]?.running, [
      { runId: 'run-1', taskKey: 'build', attempt: 1 },
      { runId: 'run-1', taskKey: 'test.unit', attempt: 2 },
    ]);
    assert.deepEqual(
      v.workers.map((w) => w.freeSlots),
      [0, 0, 0, 2],
    );
    // desk 2/2 + box 1/1 (the lost vm's attempt is about to run elsewhere; the stopped worker has no slots any more).
    assert.deepEqual(v.totals, { workers: 4, live: 1, slots: 3, busy: 3, waiting: 4 });
    assert.equal(v.error, null);
    assert.equal(v.readAt, 42);
    assert.equal(poolSummary(v), '4 workers (1 live), 3/3 slots busy, 4 waiting');
  });

  it('says each worker in one line: host, state, slots used, engines, heartbeat age', () => {
    const v = poolView(status, { url: 'x', readAt: 0 });
    assert.equal(v.workers[0]?.line, 'desk  live  slots 2/2  engines codex,script  heartbeat 0.4 s ago');
    assert.equal(v.workers[1]?.detail, 'lost  slots 1/1  engines script  heartbeat 1 min ago');
    // A worker whose PASSes did not hold when the orchestrator re-ran their checks is marked (docs/scale.md "Trust").
    assert.equal(v.workers[3]?.detail, 'stopped  slots 0/2  engines codex,script  heartbeat 2 h ago  2 PASSes that did not hold here');
  });

  it('prints the same for a terminal, with what each worker runs and the queues', () => {
    const lines = poolLines(poolView(status, { url: 'x', readAt: 0 }));
    assert.deepEqual(lines.slice(0, 4), [
      '4 workers (1 live), 3/3 slots busy, 4 waiting',
      '  desk  live  slots 2/2  engines codex,script  heartbeat 0.4 s ago  (desk-1234-abcd)',
      '    runs run-1/build/1',
      '    runs run-1/test.unit/2',
    ]);
    assert.deepEqual(lines.slice(-2), ['queue codex: 3 waiting, 2 running', 'queue script: 1 waiting, 1 running']);
  });

  it('an unreadable database is a view with the error and nothing it cannot vouch for', () => {
    const v = poolView(null, { url: 'postgres://db/pool', readAt: 7, error: 'connect ECONNREFUSED 127.0.0.1:5432' });
    assert.deepEqual(v.workers, []);
    assert.deepEqual(v.totals, { workers: 0, live: 0, slots: 0, busy: 0, waiting: 0 });
    assert.equal(poolSummary(v), 'cannot read the pool: connect ECONNREFUSED 127.0.0.1:5432');
    assert.deepEqual(poolLines(v), ['cannot read the pool: connect ECONNREFUSED 127.0.0.1:5432']);
  });

  it('refuses a held attempt that is not run/task/attempt (never a half-parsed one)', () => {
    assert.equal(parseAttemptRef('run/task'), null);
    assert.equal(parseAttemptRef('run/a/b/1'), null);
    assert.equal(parseAttemptRef('run/task/x'), null);
    const v = poolView({ workers: [worker('w', { running: ['bogus', 'r/k/3'] })], queues: [] }, { url: 'x', readAt: 0 });
    assert.deepEqual(v.workers[0]?.running, [{ runId: 'r', taskKey: 'k', attempt: 3 }]);
  });

  it('ages: tenths of seconds under a minute, then minutes, then hours; never negative', () => {
    assert.deepEqual(
      [ageText(-5), ageText(1234), ageText(59_999), ageText(60_000), ageText(3_599_999), ageText(3_600_000)],
      ['0.0 s', '1.2 s', '60.0 s', '1 min', '59 min', '1 h'],
    );
  });
});

/** Waits for the session's next flushes (every PATCH_INTERVAL_MS) until `done` holds; no time limit but mocha's. */
async function flushed(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 20));
}

describe('pool view in a dashboard session', () => {
  it('is in the snapshot and each new read reaches the page as did-change-pool (coalesced per flush)', async () => {
    let listener: ((v: PoolView | null) => void) | null = null;
    let current: PoolView | null = poolView({ workers: [worker('w1'), worker('w2')], queues: [] }, { url: 'x', readAt: 1 });
    const feed: PoolFeed = { current: () => current, subscribe: (fn) => ((listener = fn), () => (listener = null)) };
    const log = { info: () => undefined, warn: () => undefined };
    const source = new DashboardSource(tempDir(), log, { pool: feed });
    const { session, posted } = browserSession(source, log);
    try {
      assert.equal(session.receive({ type: 'ready' }), true);
      const snap = posted.find((m) => m.type === 'snapshot');
      assert.ok(snap && snap.type === 'snapshot');
      assert.deepEqual(
        snap.pool?.workers.map((w) => w.host),
        ['w1', 'w2'],
      );
      // Two reads between flushes: the page gets the newer only.
      current = poolView({ workers: [worker('w1', { running: ['r/k/1'] })], queues: [] }, { url: 'x', readAt: 2 });
      (listener as unknown as (v: PoolView | null) => void)(poolView({ workers: [], queues: [] }, { url: 'x', readAt: 2 }));
      (listener as unknown as (v: PoolView | null) => void)(current);
      // Both reads came in the same turn, before any flush: the next flush carries the newer.
      await flushed(() => posted.some((m) => m.type === 'did-change-pool'));
      const changes = posted.filter((m) => m.type === 'did-change-pool');
      assert.equal(changes.length, 1);
      assert.ok(changes[0]?.type === 'did-change-pool' && changes[0].pool?.readAt === 2 && changes[0].pool.workers[0]?.running[0]?.taskKey === 'k');
      // A host that stops following the pool says so (null), and the source lets go of the feed when closed.
      listener!(null);
      await flushed(() => posted.filter((m) => m.type === 'did-change-pool').length === 2);
      assert.deepEqual(posted.filter((m) => m.type === 'did-change-pool').at(-1), { type: 'did-change-pool', pool: null });
    } finally {
      session.dispose();
      source.close();
    }
    assert.equal(listener, null, 'closing the source unsubscribes from the pool');
  });
});
