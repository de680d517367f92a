import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cliShimText, writeCliShim } from '../../extension/core/host/cli-shim';
import { tempDir } from '../helpers/fixtures';

describe('the `verdict` launcher for the integrated terminal (unit)', () => {
  it('runs the CLI with its environment and arguments, whatever quotes and spaces its paths hold', () => {
    const dir = path.join(tempDir(), "it's a dir");
    fs.mkdirSync(dir);
    const cli = path.join(dir, 'cli $HOME `x`.js');
    fs.writeFileSync(cli, 'console.log(JSON.stringify([process.env.MARK, ...process.argv.slice(2)]));\n');
    const shim = writeCliShim(path.join(dir, 'bin'), cli, { command: process.execPath, env: { MARK: "a 'b' $c" } }, 'linux');
    assert.equal(path.basename(shim), 'verdict');
    assert.equal(fs.statSync(shim).mode & 0o777, 0o755);
    assert.deepEqual(JSON.parse(execFileSync(shim, ['run', 'x y', '$z'], { encoding: 'utf8' })), ["a 'b' $c", 'run', 'x y', '$z']);
    const mtime = fs.statSync(shim).mtimeMs;
    writeCliShim(path.join(dir, 'bin'), cli, { command: process.execPath, env: { MARK: "a 'b' $c" } }, 'linux');
    assert.equal(fs.statSync(shim).mtimeMs, mtime, 'the same text is not written again');
  });

  it('on Windows a verdict.cmd that passes every argument on', () => {
    const { name, text } = cliShimText('C:\\ext\\dist\\cli.js', { command: 'C:\\Code\\Code.exe', env: { ELECTRON_RUN_AS_NODE: '1' } }, 'win32');
    assert.equal(name, 'verdict.cmd');
    assert.equal(text, '@echo off\r\nsetlocal\r\nset "ELECTRON_RUN_AS_NODE=1"\r\n"C:\\Code\\Code.exe" "C:\\ext\\dist\\cli.js" %*\r\n');
  });
});
