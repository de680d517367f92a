import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { showPath } from '../../extension/core/fs/byte-names';
import { clearSetIdBits, setIdNote } from '../../extension/core/process/set-id';
import { IN_PROCESS_ENTRIES } from '../../extension/core/fs/bounded-walk';
import { tempDir } from '../helpers/fixtures';

// No set-uid or set-gid file leaves a step (core/process/set-id.ts).
describe("set-id bits: cleared on every regular file of a step's folders, and named", () => {
  const mode = (p: string | Buffer) => fs.lstatSync(p).mode & 0o7777;

  it('clears both bits of files at any depth (.git too), keeps the other bits; never follows a link, leaves folders and plain files', async () => {
    const dir = tempDir();
    const outside = tempDir();
    fs.mkdirSync(path.join(dir, 'sub', '.git'), { recursive: true });
    const files: [string, number][] = [
      ['uid', 0o4755],
      ['gid', 0o2750],
      ['both', 0o6711],
      ['sub/.git/hook', 0o4700],
      ['plain', 0o755],
    ];
    for (const [rel, m] of files) {
      fs.writeFileSync(path.join(dir, rel), '#!/bin/sh\n');
      fs.chmodSync(path.join(dir, rel), m);
    }
    // A name that is not valid UTF-8, found and changed exactly.
    const odd = Buffer.concat([Buffer.from(`${dir}/caf`), Buffer.from([0xe9])]);
    fs.writeFileSync(odd, 'x');
    fs.chmodSync(odd, 0o4755);
    fs.mkdirSync(path.join(dir, 'sgid-dir'));
    fs.chmodSync(path.join(dir, 'sgid-dir'), 0o2755);
    fs.writeFileSync(path.join(outside, 'target'), 'x');
    fs.chmodSync(path.join(outside, 'target'), 0o4755);
    fs.symlinkSync(path.join(outside, 'target'), path.join(dir, 'link'));
    const r = await clearSetIdBits([dir, path.join(dir, 'missing')]);
    assert.equal(r.error, null);
    assert.deepEqual(r.files, [path.join(dir, 'both'), showPath(odd), path.join(dir, 'gid'), path.join(dir, 'sub/.git/hook'), path.join(dir, 'uid')].sort());
    assert.deepEqual(
      files.map(([rel]) => mode(path.join(dir, rel))),
      [0o755, 0o750, 0o711, 0o700, 0o755],
    );
    assert.equal(mode(odd), 0o755);
    assert.equal(mode(path.join(dir, 'sgid-dir')) & 0o2000, 0o2000, 'a folder is left as it is');
    assert.equal(mode(path.join(outside, 'target')), 0o4755, 'the link was not followed');
    assert.deepEqual(await clearSetIdBits([dir]), { files: [], error: null });
  });

  it('a folder past the in-process budget is searched by find: the same files cleared', async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'many'));
    for (let i = 0; i <= IN_PROCESS_ENTRIES; i++) fs.writeFileSync(path.join(dir, 'many', `f${i}`), '');
    fs.writeFileSync(path.join(dir, 'many', 'zz'), 'x');
    fs.chmodSync(path.join(dir, 'many', 'zz'), 0o6755);
    const outside = tempDir();
    fs.writeFileSync(path.join(outside, 'target'), 'x');
    fs.chmodSync(path.join(outside, 'target'), 0o4755);
    fs.symlinkSync(path.join(outside, 'target'), path.join(dir, 'link'));
    assert.deepEqual(await clearSetIdBits([dir]), { files: [path.join(dir, 'many', 'zz')], error: null });
    assert.equal(mode(path.join(dir, 'many', 'zz')), 0o755);
    assert.equal(mode(path.join(outside, 'target')), 0o4755, 'the link was not followed');
  });

  it('setIdNote: nothing for nothing; the first five files and the count; an error said', () => {
    assert.equal(setIdNote('the worker', null), null);
    assert.equal(setIdNote('the worker', { files: [], error: null }), null);
    assert.equal(setIdNote('the check', { files: ['/t/a'], error: null }), 'the check left set-uid/set-gid files; their set-id bits were cleared: /t/a');
    assert.equal(
      setIdNote('the worker', { files: ['1', '2', '3', '4', '5', '6'], error: null }),
      'the worker left set-uid/set-gid files; their set-id bits were cleared: 1, 2, 3, 4, 5, … (6)',
    );
    assert.equal(
      setIdNote('setup', { files: [], error: 'find could not look for set-uid and set-gid files: x' }),
      'after setup: find could not look for set-uid and set-gid files: x',
    );
  });
});
