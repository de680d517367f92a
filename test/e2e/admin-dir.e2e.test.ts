import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// A worker writes its worktree's admin dir (HEAD, index, logs), but every `git worktree add` in the repository opens
// each registered worktree's `gitdir` file there: a FIFO in its place blocks that open forever, so the next task's
// worktree (made under the repository lock) would never come and the run would hang.
describe("a worktree's admin dir", function () {
  this.timeout(300000);

  it('a worker cannot put a FIFO in place of its gitdir nor empty its commondir: the tasks after it get their worktrees and the run ends', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const evil = [
      'G=$(git rev-parse --git-dir)',
      '{ mv "$G/gitdir" "$G/gitdir.old" && mv "$G/gitdir.old" "$G/gitdir"; } 2>/dev/null || echo "gitdir move refused"',
      '{ rm -f "$G/gitdir" && mkfifo "$G/gitdir"; } || echo "gitdir replace refused"',
      'test -p "$G/gitdir" && echo "gitdir is a fifo"',
      // Left empty, every `git worktree add` in the repository dies reading it ("failed to read …/commondir").
      '{ rm -f "$G/commondir"; } 2>/dev/null || echo "commondir removal refused"',
      '{ : > "$G/commondir"; } 2>/dev/null || echo "commondir emptying refused"',
      'test -s "$G/commondir" || echo "commondir is empty"',
      // Read by every `git worktree list` in the repository: put back after the step (Verdict never locks a worktree).
      'mkfifo "$G/locked" || echo "locked refused"',
      'echo done > out.txt',
      // Long enough for the next task's worktree to be made meanwhile (without the defence, that never ends).
      'sleep 4',
    ].join('\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 3,
      tasks: [
        scriptTask('evil', evil, 'test -s out.txt'),
        scriptTask('first', 'sleep 1; echo f > f.txt', 'test -s f.txt'),
        scriptTask('next', 'echo n > n.txt', 'test -s n.txt', { after: ['first'] }),
      ],
    });
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(rows.map((x) => `${x.task_key}:${x.verdict}`).sort(), ['evil:PASS', 'first:PASS', 'next:PASS']);
    const log = fs.readFileSync(String(rows.find((x) => x.task_key === 'evil')?.worker_log), 'utf8');
    assert.match(log, /gitdir replace refused/);
    assert.match(log, /gitdir move refused/);
    assert.doesNotMatch(log, /gitdir is a fifo/);
    assert.match(log, /commondir emptying refused/);
    assert.match(log, /commondir removal refused/);
    assert.doesNotMatch(log, /commondir is empty/);
    assert.doesNotMatch(log, /locked refused/, "the admin dir is the worker's to write");
    assert.match(git(repo, 'worktree', 'list'), /evil/, 'git worktree list reads no FIFO the worker left');
    assert.equal(git(repo, 'show', `${String(rows.find((x) => x.task_key === 'next')?.branch)}:n.txt`), 'n');
  });
});
