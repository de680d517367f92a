import assert from 'node:assert/strict';
import { workTimeMs } from '../../schemas/work-time';

const H = 3_600_000;
const run = (...attempts: [number, number | null][][]) => attempts.map((as) => ({ attempts: as.map(([startedAt, endedAt]) => ({ startedAt, endedAt })) }));

/** A run's elapsed time as the dashboard shows it: work time, the union of its attempts' spans (schemas/work-time.ts). */
describe('workTimeMs', () => {
  it('a rerun hours later adds its own span, not the idle hours between', () => {
    // Two tasks ran 0–60 s together; one was rerun five hours later for 30 s.
    const tasks = run(
      [
        [0, 60_000],
        [5 * H, 5 * H + 30_000],
      ],
      [[1_000, 50_000]],
    );
    assert.equal(workTimeMs(tasks, 6 * H), 90_000);
  });

  it('overlapping attempts count once; a running attempt counts up to now', () => {
    assert.equal(workTimeMs(run([[0, 10_000]], [[5_000, 20_000]], [[19_000, null]]), 25_000), 25_000);
  });

  it('no attempt is no time; an attempt ending before it started (a clock step) counts as nothing', () => {
    assert.equal(workTimeMs(run([]), 1_000), 0);
    assert.equal(workTimeMs(run([[10_000, 5_000]], [[0, 1_000]]), 20_000), 1_000);
  });
});
