import assert from 'node:assert/strict';
import { nextChoice, reassign, type Reassignable } from '../../extension/core/run/reassign';

const none = () => null;
const task = (engine: string, fallback: string[], extra: Partial<Reassignable['spec']> = {}, used = 0): Reassignable => ({
  spec: { key: 't', engine, model: null, fallback: fallback.map((e) => ({ engine: e, model: null })), ...extra },
  used,
});

describe("reassign: moving a task's next attempt off an exhausted engine", () => {
  it('moves one step along the chain without spending an attempt; a later retry goes on from there', () => {
    const t = task('a', ['b', 'c']);
    assert.match(reassign(t, 'a', 'was rate-limited', none) ?? '', /^engine a was rate-limited: t's next attempt runs on b at once/);
    assert.deepEqual([t.used, t.moved, t.reassignedFrom, nextChoice(t, none).engine], [0, 1, 'a', 'b']);
    t.used = 1; // attempt on b failed: the retry takes c
    assert.equal(nextChoice(t, none).engine, 'c');
    assert.equal(reassign(t, 'c', 'was rate-limited', none), null, 'c is the last entry: nothing to move to');
  });

  it('skips chain entries on the same engine (another model of it); stays when every later entry is that engine', () => {
    const t = task('a', ['a', 'a', 'b']);
    assert.ok(reassign(t, 'a', 'waits', none));
    assert.equal(t.moved, 3);
    assert.equal(nextChoice(t, none).engine, 'b');
    const same = task('a', ['a']);
    assert.equal(reassign(same, 'a', 'waits', none), null);
    assert.equal(same.moved, undefined);
  });

  it('stays: on_quota "wait", no fallback, or the next attempt is not on the engine named', () => {
    assert.equal(reassign(task('a', ['b'], { onQuota: 'wait' }), 'a', 'waits', none), null);
    assert.equal(reassign(task('a', []), 'a', 'waits', none), null);
    assert.equal(reassign(task('a', ['b']), 'b', 'waits', none), null);
  });
});
