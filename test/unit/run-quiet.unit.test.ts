import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runQuiet } from '../../extension/core/process/run-captured';
import { spawnHelperPid } from '../../extension/core/process/spawner';
import { addWorktree, inspectRepo } from '../../extension/core/git/worktree';
import { runGit } from '../../extension/core/git/safe-git';
import { makeRepo, tempDir } from '../helpers/fixtures';
import { describeEachHelper } from '../helpers/spawn-helpers';

// A tree's commands (git branch, worktree add, read-tree, mount) are started by the spawn helper, not forked from the
// orchestrator (a fork's CPU grows with the forking process's memory: docs/trees.md); how each ends
// is still said as runCaptured says it.
describeEachHelper('runQuiet: a command started by the spawn helper, its output read back', function () {
  this.timeout(60000);

  it('exit code and the whole output (stdout and stderr together) as stderr; only the given environment', async () => {
    const r = await runQuiet('sh', ['-c', 'printf "out\\n"; printf "err $ONLY ${HOME:-nohome}" >&2; exit 3'], {
      env: { PATH: process.env.PATH, ONLY: 'given' },
    });
    assert.deepEqual({ ...r }, { exitCode: 3, signal: null, stdout: '', stderr: 'out\nerr given nohome', timedOut: false, error: null });
    const ok = await runQuiet('true', [], { env: { PATH: process.env.PATH } });
    assert.deepEqual([ok.exitCode, ok.error, ok.stderr], [0, null, '']);
    // The output file sits in a folder only this user can enter, gone once no command runs.
    const where = await runQuiet('sh', ['-c', 'p=$(readlink /proc/$$/fd/1); stat -c %a "${p%/*}"; echo "$p"'], { env: { PATH: process.env.PATH } });
    const [mode, file] = where.stderr.trim().split('\n') as [string, string];
    assert.equal(mode, '700', where.stderr);
    assert.match(file, /verdict-run-[^/]+\/\d+\.out$/);
    assert.equal(fs.existsSync(file), false, "the command's file is removed once it has ended");
    for (let i = 0; i < 150 && fs.existsSync(path.dirname(file)); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(fs.existsSync(path.dirname(file)), false, 'the folder is removed once no command has run for a second');
  });

  it('a command that cannot start, one killed by its time limit (with what it started), one killed by a signal, one past maxBuffer', async () => {
    const missing = await runQuiet('/no/such/binary', [], { env: {} });
    assert.equal(missing.exitCode, null);
    assert.match(String(missing.error?.message), /ENOENT/);
    const dir = tempDir();
    const pidFile = path.join(dir, 'child.pid');
    const slow = await runQuiet('bash', ['-c', `sleep 60 & echo $! > ${pidFile}; wait`], { env: { PATH: process.env.PATH }, timeoutMs: 300 });
    assert.equal(slow.timedOut, true);
    assert.equal(slow.signal, 'SIGKILL');
    const child = Number(fs.readFileSync(pidFile, 'utf8'));
    assert.ok(child > 0);
    // Killed with its group: gone, or a zombie its new parent (the helper, a subreaper, or init) has not reaped yet.
    const state = () => {
      try {
        const stat = fs.readFileSync(`/proc/${child}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? 'gone';
      } catch {
        return 'gone';
      }
    };
    for (let i = 0; i < 100 && !['gone', 'Z'].includes(state()); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(['gone', 'Z'].includes(state()), `the command's own child ${child} was killed with its group (state ${state()})`);
    const killed = await runQuiet('sh', ['-c', 'kill -TERM $$'], { env: { PATH: process.env.PATH } });
    assert.deepEqual([killed.exitCode, killed.signal, killed.error], [null, 'SIGTERM', null]);
    // Long output is cut where it is read back; the command is not stopped for it (it ran to its end: exit 0).
    const loud = await runQuiet('sh', ['-c', 'yes | head -c 5000; sleep 0.5; echo done > done'], {
      cwd: dir,
      env: { PATH: process.env.PATH },
      maxBuffer: 1000,
    });
    assert.match(String(loud.error?.message), /printed more than 1000 bytes/);
    assert.equal(loud.stderr.length, 1000);
    assert.deepEqual([loud.exitCode, fs.existsSync(path.join(dir, 'done'))], [0, true]);
  });

  it("git's refusal comes back as its message; a tree's git commands are the helper's children, not this process's", async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'), { 'a.txt': 'a\n' });
    await assert.rejects(runGit(root, ['branch', '--no-track', 'main', 'HEAD'], { quiet: true }), /already exists/);
    assert.equal(await runGit(root, ['branch', '--no-track', 'made', 'HEAD'], { quiet: true }), '');
    // A git on PATH that notes its parent, then runs the real one.
    const bin = path.join(dir, 'bin');
    const seen = path.join(dir, 'parents');
    fs.mkdirSync(bin);
    const real = ['/usr/bin/git', '/bin/git', '/usr/local/bin/git'].find((p) => fs.existsSync(p)) as string;
    fs.writeFileSync(path.join(bin, 'git'), `#!/bin/sh\necho "$PPID $*" >> ${seen}\nexec ${real} "$@"\n`, { mode: 0o755 });
    const saved = process.env.PATH;
    process.env.PATH = `${bin}:${saved}`;
    try {
      const repo = await inspectRepo(root, 'HEAD');
      const links = await addWorktree(repo, path.join(dir, 'wt', 't1'), 'verdict/r/t1');
      assert.ok(fs.existsSync(path.join(links.dir, 'a.txt')), 'checked out');
    } finally {
      process.env.PATH = saved;
    }
    const lines = fs.readFileSync(seen, 'utf8').trim().split('\n');
    const helper = spawnHelperPid();
    assert.ok(helper, 'the helper runs');
    for (const verb of ['branch', 'worktree add', 'read-tree']) {
      const line = lines.find((l) => l.includes(` ${verb} `));
      assert.ok(line, `${verb} ran: ${lines.join(' | ')}`);
      assert.equal(Number(line.split(' ')[0]), helper, `${verb} was started by the helper`);
    }
  });
});
