import assert from 'node:assert/strict';
import { readerEnd, type ReaderReceipt } from '../../extension/core/run/reader-end';

// A reader's answer (a reviewer's, critic's, ranking reviewer's) counts only when it ended on its own (docs/containment.md "Readers").
// Before, only a reader that could not start, stalled or timed out lost its answer; one killed by a signal (exit 137
// through bubblewrap) or exiting non-zero was read, and code it ran could have written that answer.
const LIMITS = { timeoutMs: 600_000, watchdogMs: 120_000, finalGraceMs: 30_000 };
const ended: ReaderReceipt = { exitCode: 0, signal: null, timedOut: false, stalled: false, stoppedAfterFinal: false, spawnError: null };

describe("readerEnd: a reader's answer counts only when it ended on its own", () => {
  it('exit 0 by no signal: its answer counts', () => {
    assert.equal(readerEnd(ended, 'the reviewer', LIMITS), null);
  });

  const cases: { name: string; receipt: Partial<ReaderReceipt>; errorClass?: 'rate_limit' | null; want: RegExp }[] = [
    {
      name: 'killed by SIGKILL inside the sandbox (bubblewrap reports 128 + 9)',
      receipt: { exitCode: 137 },
      want: /^the reviewer exited 137 \(128 \+ SIGKILL: killed by a signal\), so it did not end on its own: its answer is not counted/,
    },
    {
      name: 'killed by a signal outside any sandbox',
      receipt: { exitCode: null, signal: 'SIGKILL' },
      want: /^the reviewer was killed by SIGKILL, so it did not end on its own/,
    },
    {
      name: 'exited non-zero with its error class',
      receipt: { exitCode: 1 },
      errorClass: 'rate_limit',
      want: /^the reviewer exited 1 \(rate_limit\), so it did not end on its own/,
    },
    { name: 'exited 2', receipt: { exitCode: 2 }, want: /^the reviewer exited 2, so/ },
    {
      name: 'still running after its final event, stopped by Verdict',
      receipt: { exitCode: 143, stoppedAfterFinal: true },
      want: /^the reviewer printed its final event but kept running and was stopped after 30 s, so it did not end on its own/,
    },
    { name: 'timed out', receipt: { exitCode: 143, timedOut: true }, want: /^the reviewer ran out of time after 600 s and was stopped$/ },
    { name: 'stalled', receipt: { exitCode: 143, stalled: true }, want: /^the reviewer printed nothing for 120 s and was stopped$/ },
    { name: 'could not start', receipt: { exitCode: null, spawnError: 'spawn codex ENOENT' }, want: /^the reviewer could not start: spawn codex ENOENT$/ },
  ];
  for (const c of cases) {
    it(c.name, () => assert.match(String(readerEnd({ ...ended, ...c.receipt }, 'the reviewer', LIMITS, c.errorClass ?? null)), c.want));
  }
});
