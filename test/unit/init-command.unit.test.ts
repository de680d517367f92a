import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { initCommand } from '../../extension/cli/init-command';
import { tempDir } from '../helpers/fixtures';

/** Runs initCommand into `dir`, collecting its stdout lines. */
function init(dir: string): { code: number; out: string[] } {
  const out: string[] = [];
  const code = initCommand({ template: 'fan-out', dir, list: false, templatesDir: path.resolve('templates') }, { out: (l) => out.push(l), err: () => {} });
  return { code, out };
}

/** The arguments bash gives `verdict` in each command of `line` (a stub that prints them, NUL-separated). */
function argsBashSees(line: string): string[][] {
  const stdout = execFileSync('bash', ['-c', `verdict() { printf '%s\\0' "$@"; printf '\\n\\0'; }\n${line}`], { encoding: 'utf8' });
  return stdout
    .split('\n\0')
    .filter((s) => s !== '')
    .map((s) => s.split('\0').filter((a) => a !== ''));
}

describe('verdict init: the next command it prints', () => {
  for (const [what, name] of [
    ['a space', 'my manifests'],
    ['a single quote and a $', "it's $HOME"],
    ['a newline', 'two\nlines'],
  ] as const) {
    it(`runs as printed when the folder's name has ${what}`, () => {
      const dir = path.join(tempDir(), name);
      const r = init(dir);
      assert.equal(r.code, 0, r.out.join('\n'));
      const manifest = path.join(dir, 'fan-out.swarm.json');
      assert.ok(fs.existsSync(manifest));
      const at = r.out.findIndex((l) => l.startsWith('next: '));
      const command = r.out[at + 1] ?? '';
      assert.ok(!command.includes('\n'), `the command is cut over lines: ${JSON.stringify(command)}`);
      assert.deepEqual(
        argsBashSees(command),
        [
          ['lint', manifest],
          ['run', manifest],
        ],
        `printed: ${command}`,
      );
    });
  }

  it('leaves a plain path unquoted', () => {
    const dir = path.join(tempDir(), 'plain');
    const r = init(dir);
    assert.ok(r.out.includes(`  verdict lint ${dir}/fan-out.swarm.json && verdict run ${dir}/fan-out.swarm.json`), r.out.join('\n'));
  });
});
