import assert from 'node:assert/strict';
import { signalGroup } from '../../extension/core/process/supervisor';

// A pid read back from a state file (reconcile, clean) reaches signalGroup. A planted state naming pid 1 (with init's
// start time, which is easy to guess) or 0 must not become kill(-1) ("every process of this user") or kill(0) ("our own
// group"). process.kill is replaced by a recorder here, so a regression records the call instead of making it.
describe('signalGroup never signals every process or its own group', () => {
  const realKill = process.kill;
  let calls: [number, string | number | undefined][] = [];
  beforeEach(() => {
    calls = [];
    process.kill = ((pid: number, sig?: string | number) => {
      calls.push([pid, sig]);
      return true;
    }) as typeof process.kill;
  });
  afterEach(() => {
    process.kill = realKill;
  });

  it('ignores 1, 0, negatives and non-integers', () => {
    for (const pgid of [1, 0, -1, -42, 1.5, Number.NaN]) signalGroup(pgid, 'SIGKILL');
    assert.deepEqual(calls, []);
  });

  it('signals a real group as -pgid', () => {
    signalGroup(4242, 'SIGTERM');
    assert.deepEqual(calls, [[-4242, 'SIGTERM']]);
  });
});
