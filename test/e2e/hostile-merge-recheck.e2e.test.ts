import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// `verdict merge` re-runs the task's check (the worker's code) after the rebase, sandboxed as the attempt's check was:
// that includes VERDICT_HOME hidden (other runs' rows, other tasks' worktrees and records). The check here passes only
// where it sees none of it, so a merge that exits 0 shows the re-check was hidden from it.
describe("hostile: verdict merge's re-check sees no VERDICT_HOME", function () {
  this.timeout(120000);
  before(async function () {
    await requireSandbox(this);
  });

  it("a check that fails wherever it can list VERDICT_HOME's runs passes the attempt and the re-check alike: merged", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    const check = `if ls ${path.join(home, 'runs')} >/dev/null 2>&1; then echo "sees VERDICT_HOME at $VERDICT_ATTEMPT"; exit 1; fi; test -s a.txt`;
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('a', 'echo a > a.txt', check, { max_attempts: 1 })] });
    const env = { HOME: path.join(dir, 'user-home') };
    fs.mkdirSync(env.HOME);
    const r = await cli(['run', file, '--home', home, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    const merge = await cli(['merge', runId, 'a', '--home', home], { env });
    const log = path.join(home, 'runs', runId, 'tasks', 'a', 'merge-check.log');
    assert.equal(merge.exitCode, 0, `${merge.all}\n${fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : ''}`);
    assert.equal(git(repo, 'show', 'HEAD:a.txt'), 'a');
  });
});
