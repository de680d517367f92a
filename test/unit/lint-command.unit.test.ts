import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { builtinEngines } from '../../engines/index';
import { lintCommand } from '../../extension/cli/lint-command';
import { tempDir } from '../helpers/fixtures';

const task = (key: string, extra: Record<string, unknown> = {}) => ({
  key,
  spec: `Write out/${key}.txt containing the task's key and nothing else, then stop.`,
  check: `test "$(cat out/${key}.txt)" = ${key}`,
  expect_files: [`out/${key}.txt`],
  verified: `out/${key}.txt holds ${key}`,
  task_type: 'shell',
  engine: 'script',
  ...extra,
});

/** `verdict lint` of `manifest` (an object written to a file) with the scoreboard of `home`; its lines and exit code. */
async function lint(manifest: object, home: string): Promise<{ code: number; out: string }> {
  const file = path.join(tempDir(), 'm.swarm.json');
  fs.writeFileSync(file, JSON.stringify(manifest, null, 2));
  const lines: string[] = [];
  const io = { out: (s: string) => lines.push(s), err: (s: string) => lines.push(s) };
  const code = await lintCommand([file], false, builtinEngines(), false, io as Parameters<typeof lintCommand>[4], { home, route: null });
  return { code, out: lines.join('\n') };
}

describe('verdict lint reads the eval log only for a manifest that needs it (cli/lint-command.ts)', () => {
  it('a manifest without "auto" or "budget_usd" is linted without loading the scoreboard (which leaves its cache files in the home)', async () => {
    const home = tempDir();
    const r = await lint({ run_name: 'plain', workdir: 'w', tasks: [task('a'), task('b')] }, home);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /1 manifest\(s\): 0 error\(s\)/);
    assert.deepEqual(fs.readdirSync(home), [], 'the scoreboard was loaded');
  });

  // A budget_usd held against the forecast by `verdict lint`: test/e2e/plan.e2e.test.ts (it needs a history of rows).
  it('with engine "auto" the evidence is read: an empty log says "auto will explore"', async () => {
    const home = tempDir();
    const auto = await lint({ run_name: 'auto', workdir: 'w', route: { from: ['script:s1'], explore: 0 }, tasks: [task('a', { engine: 'auto' })] }, home);
    assert.match(auto.out, /\[route\].*auto will explore: no candidate of route\.from has a judged task of task type "shell"/, auto.out);
    assert.ok(
      fs.readdirSync(home).some((f) => f.startsWith('verdict.sqlite')),
      'the scoreboard was loaded (its cache files are in the home): the control for the case above',
    );
  });
});
