import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { selfCommand, shellWord } from '../../extension/cli/self-command';
import { tempDir } from '../helpers/fixtures';

describe('selfCommand: how a hint names this CLI', () => {
  it('`verdict` when the verdict on PATH is this script (a symlink to it, as npm installs bins)', () => {
    const dir = tempDir();
    const script = path.join(dir, 'pkg', 'dist', 'cli.js');
    fs.mkdirSync(path.dirname(script), { recursive: true });
    fs.writeFileSync(script, '');
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.symlinkSync(script, path.join(dir, 'bin', 'verdict'));
    assert.equal(selfCommand(script, ['/nonexistent', path.join(dir, 'bin')].join(path.delimiter)), 'verdict');
  });

  it('`node <script>` when no verdict is on PATH, or another one is first (a clone run through npm run demo)', () => {
    const dir = tempDir();
    const script = path.join(dir, 'my clone', 'dist', 'cli.js');
    fs.mkdirSync(path.dirname(script), { recursive: true });
    fs.writeFileSync(script, '');
    assert.equal(selfCommand(script, path.join(dir, 'empty')), `node '${script}'`);
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.writeFileSync(path.join(dir, 'bin', 'verdict'), '#!/bin/sh\n');
    assert.equal(selfCommand(script, path.join(dir, 'bin')), `node '${script}'`);
    // Under the current directory it is named relative to it.
    assert.equal(selfCommand(path.resolve('dist/cli.js'), ''), 'node dist/cli.js');
    assert.equal(selfCommand('', ''), 'verdict');
  });

  it('shellWord quotes what a shell would split or expand', () => {
    assert.equal(shellWord('/a/b-c_d.js'), '/a/b-c_d.js');
    assert.equal(shellWord("/tmp/it's here"), `'/tmp/it'\\''s here'`);
    assert.equal(shellWord('/tmp/$HOME'), `'/tmp/$HOME'`);
  });
});
