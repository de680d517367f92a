import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { restoreState, snapshotState } from '../../extension/core/run/state-guard';
import { tempDir } from '../helpers/fixtures';

// run/state-guard.ts: an engine's guarded settings are put back after a step, and the put back never follows a link a
// worker made in the state dir it could write (a custom engine may guard a path a folder deep).

describe("state guard: putting settings back never writes through a worker's link", () => {
  it('a link in place of a folder on the way to a guarded file: the link goes, the file is put back inside the state dir, the target is untouched', () => {
    const state = tempDir();
    const guarded = path.join(state, 'conf', 'settings.json');
    fs.mkdirSync(path.dirname(guarded));
    fs.writeFileSync(guarded, '{"mine":1}');
    const snap = snapshotState([guarded], path.join(tempDir(), 'snap'), [state]);
    // The worker: conf/ renamed, a link to the user's own folder in its place, its settings.json "changed".
    const outside = tempDir();
    fs.writeFileSync(path.join(outside, 'settings.json'), '{"users":"other file"}');
    fs.renameSync(path.join(state, 'conf'), path.join(state, 'conf.bak'));
    fs.symlinkSync(outside, path.join(state, 'conf'));
    assert.deepEqual(restoreState(snap), [guarded]);
    assert.deepEqual(fs.readdirSync(outside), ['settings.json']);
    assert.equal(fs.readFileSync(path.join(outside, 'settings.json'), 'utf8'), '{"users":"other file"}');
    assert.equal(fs.lstatSync(path.join(state, 'conf')).isDirectory(), true);
    assert.equal(fs.readFileSync(guarded, 'utf8'), '{"mine":1}');
  });

  it("a user's own link on the way is followed while it leads where it did at the snapshot; re-pointed, nothing is written", () => {
    const state = tempDir();
    const real = tempDir();
    fs.writeFileSync(path.join(real, 'settings.json'), 'v1');
    fs.symlinkSync(real, path.join(state, 'conf'));
    const guarded = path.join(state, 'conf', 'settings.json');
    const snap = snapshotState([guarded], path.join(tempDir(), 'snap'), [state]);
    fs.writeFileSync(guarded, 'planted');
    assert.deepEqual(restoreState(snap), [guarded]);
    assert.equal(fs.readFileSync(path.join(real, 'settings.json'), 'utf8'), 'v1');
    // Re-pointed elsewhere: named (the caller reports it), but nothing there is removed or written.
    const elsewhere = tempDir();
    fs.writeFileSync(path.join(elsewhere, 'settings.json'), "not the engine's");
    fs.rmSync(path.join(state, 'conf'));
    fs.symlinkSync(elsewhere, path.join(state, 'conf'));
    assert.deepEqual(restoreState(snap), [guarded]);
    assert.equal(fs.readFileSync(path.join(elsewhere, 'settings.json'), 'utf8'), "not the engine's");
  });

  it('a guarded path right in its state dir is put back as before (changed restored, new removed)', () => {
    const state = tempDir();
    const file = path.join(state, 'settings.json');
    const dir = path.join(state, 'hooks');
    fs.writeFileSync(file, 'a');
    const snap = snapshotState([file, dir], path.join(tempDir(), 'snap'), [state]);
    fs.writeFileSync(file, 'b');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'evil.sh'), 'x');
    assert.deepEqual(restoreState(snap), [file, dir]);
    assert.equal(fs.readFileSync(file, 'utf8'), 'a');
    assert.equal(fs.existsSync(dir), false);
  });
});
