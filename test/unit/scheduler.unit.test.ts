import assert from 'node:assert/strict';
import { Scheduler } from '../../extension/core/run/scheduler';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('scheduler', () => {
  it('keeps exactly max_parallel jobs busy while work remains, with uneven job lengths', async () => {
    const samples: number[] = [];
    let active = 0;
    const s = new Scheduler<number>(3, async (ms) => {
      active++;
      samples.push(active);
      await sleep(ms);
      active--;
    });
    const lengths = [30, 5, 5, 5, 40, 5, 5, 5, 5, 20];
    for (const l of lengths) s.push(l);
    await s.idle();
    assert.equal(s.peakActive, 3);
    // every job that started while ≥ 3 jobs remained saw exactly 3 running (itself included)
    assert.deepEqual(samples.slice(0, 3), [1, 2, 3]);
    assert.ok(
      samples.slice(3, lengths.length - 2).every((n) => n === 3),
      `samples ${samples}`,
    );
    assert.equal(samples.length, lengths.length);
  });

  it('runs follow-up jobs pushed by a job (retries) and waits for delayed ones', async () => {
    const seen: string[] = [];
    const s: Scheduler<string> = new Scheduler<string>(2, async (job) => {
      seen.push(job);
      if (job === 'a') s.push('a-retry', 20);
    });
    s.push('a');
    s.push('b');
    await s.idle();
    assert.deepEqual(seen.sort(), ['a', 'a-retry', 'b']);
  });

  it('after close, queued and delayed jobs are dropped, running ones finish', async () => {
    const ran: number[] = [];
    const dropped: number[] = [];
    const s = new Scheduler<number>(
      1,
      async (n) => {
        await sleep(20);
        ran.push(n);
      },
      (n) => dropped.push(n),
    );
    s.push(1);
    s.push(2);
    s.push(3, 50);
    s.close();
    await s.idle();
    assert.deepEqual(ran, [1]);
    assert.deepEqual(dropped.sort(), [2, 3]);
  });

  it('withdraw takes a queued or delayed job back without dropping it; a running one is not withdrawn', async () => {
    const ran: number[] = [];
    const dropped: number[] = [];
    let release: () => void = () => undefined;
    const s = new Scheduler<number>(
      1,
      async (n) => {
        if (n === 1) await new Promise<void>((r) => (release = r));
        ran.push(n);
      },
      (n) => dropped.push(n),
    );
    s.push(1);
    s.push(2);
    s.push(3, 30);
    assert.equal(s.withdraw(1), false, 'running');
    assert.equal(s.withdraw(2), true);
    assert.equal(s.withdraw(3), true);
    assert.equal(s.withdraw(2), false, 'already out');
    release();
    await s.idle();
    await sleep(50);
    assert.deepEqual(ran, [1]);
    assert.deepEqual(dropped, []);
  });

  it('refuses a limit below 1', () => {
    assert.throws(() => new Scheduler(0, async () => undefined), /max_parallel must be an integer ≥ 1/);
  });
});
