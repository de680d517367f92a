import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { bashEngine, git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// Red before green (docs/workflows.md "Phases"): once the test phase's check passes, it runs again on the tree without
// the implementation (the phase files put back as before their implement tasks) and must fail there.

/** A config with the test writer `tester` (its bash body gets the prompt as $1), and the PATH that finds it. */
const tester = (dir: string, body: string) => bashEngine(dir, 'tester', body);

const IMPLEMENT = `case {file} in upper.sh) echo 'tr a-z A-Z' > upper.sh ;; lower.sh) echo 'tr A-Z a-z' > lower.sh ;; esac`;

/** Tests of the implementation; `at` is where the files are (worktree: the task dir; plain: the inputs). */
function realTests(at: { upper: string; lower: string }): string {
  return `mkdir -p tests && cat > tests/test.sh <<'EOF'
test "$(echo aB | bash ${at.upper})" = AB || { echo "upper.sh is wrong"; exit 1; }
test "$(echo aB | bash ${at.lower})" = ab || { echo "lower.sh is wrong"; exit 1; }
EOF`;
}
const WORKTREE_FILES = { upper: 'upper.sh', lower: 'lower.sh' };
const INPUT_FILES = { upper: '"$VERDICT_INPUTS/case--impl-1/upper.sh"', lower: '"$VERDICT_INPUTS/case--impl-2/lower.sh"' };

/** Writes `exit 0` tests first; real ones once its prompt carries the red-before-green failure. */
function lazyThenReal(at: { upper: string; lower: string }): string {
  return `if printf '%s' "$1" | grep -q 'pass without the implementation'; then
${realTests(at)}
else mkdir -p tests && echo 'exit 0' > tests/test.sh; fi`;
}

interface StateJson {
  tasks: { key: string; status: string; branch: string | null; commit: string | null; dir: string }[];
}

async function run(
  dir: string,
  testerBody: string,
  o: { worktrees: boolean; red?: boolean; maxAttempts?: number; noSandbox?: boolean; base?: Record<string, string>; setup?: string; tree?: string },
) {
  const test: Record<string, unknown> = {
    engine: 'tester',
    check: 'bash tests/test.sh',
    expect_files: ['tests/test.sh'],
    ...(o.red === false ? { red: false } : {}),
  };
  const task = scriptTask('case', IMPLEMENT, 'bash -n {file} && test -s {file}', {
    verified: '{file} is a bash script',
    max_attempts: o.maxAttempts ?? 1,
    phases: { files: ['upper.sh', 'lower.sh'], test },
  });
  const repo = o.worktrees ? makeRepo(path.join(dir, 'repo'), o.base) : null;
  const file = repo
    ? writeManifest(repo, { worktrees: true, ...(o.tree ? { tree: o.tree } : {}), tasks: [task] })
    : writeManifest(dir, { workdir: 'work', ...(o.setup ? { setup: o.setup } : {}), tasks: [task] });
  const { config, env } = tester(dir, testerBody);
  const home = path.join(dir, 'home');
  const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard', ...(o.noSandbox ? ['--no-sandbox'] : [])], { env });
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  const runDir = path.join(home, 'runs', id as string);
  const state = JSON.parse(fs.readFileSync(path.join(runDir, 'state.json'), 'utf8')) as StateJson;
  const rows = readRows(home).filter((row) => row.task_key === 'case');
  return { repo, runDir, code: r.exitCode, out: r.all, state, rows };
}

type Red = { files: string[]; exit_code: number | null; timed_out: boolean; check_log: string } | undefined;

describe('phases: red before green (the tests must fail without the implementation)', function () {
  this.timeout(300000);

  it('worktree mode: `exit 0` tests FAIL with the reason, the retry is told why, and real tests then PASS; the tree and branch stay whole', async () => {
    const { repo, runDir, code, out, state, rows } = await run(tempDir(), lazyThenReal(WORKTREE_FILES), { worktrees: true, maxAttempts: 2 });
    assert.equal(code, 0, out);
    assert.deepEqual(
      rows.map((r) => r.verdict),
      ['FAIL', 'PASS'],
      out,
    );
    assert.match(String(rows[0]!.notes), /the tests pass without the implementation: `bash tests\/test\.sh` exited 0 on the tree without upper\.sh, lower\.sh/);
    assert.deepEqual(rows[0]!.red as Red, {
      files: ['upper.sh', 'lower.sh'],
      exit_code: 0,
      timed_out: false,
      check_log: path.join(runDir, 'tasks', 'case', 'attempt-1', 'red.log'),
    });
    // The real tests fail there: bash cannot open upper.sh.
    assert.equal((rows[1]!.red as Red)?.exit_code, 1);
    assert.match(fs.readFileSync(path.join(runDir, 'tasks', 'case', 'attempt-2', 'red.log'), 'utf8'), /upper\.sh/);
    // The retry's prompt carries the reason.
    const retry = fs.readFileSync(path.join(runDir, 'tasks', 'case', 'attempt-2', 'prompt.md'), 'utf8');
    assert.match(retry, /pass without the implementation/);
    assert.match(retry, /Its exit code on the tree without the implementation was 0\./);
    // Nothing of the red run is left, and the task's tree and branch hold the implementation and the tests.
    assert.equal(fs.existsSync(path.join(runDir, 'tasks', 'case', 'check-tree')), false);
    const t = state.tasks.find((x) => x.key === 'case')!;
    assert.equal(fs.readFileSync(path.join(t.dir, 'upper.sh'), 'utf8'), 'tr a-z A-Z\n');
    assert.equal(fs.readFileSync(path.join(t.dir, 'lower.sh'), 'utf8'), 'tr A-Z a-z\n');
    assert.equal(git(t.dir, 'status', '--porcelain'), '', 'the checks wrote nothing in the task dir');
    assert.equal(git(repo!, 'show', `${t.commit}:upper.sh`), 'tr a-z A-Z');
    assert.equal(git(repo!, 'show', `${t.commit}:lower.sh`), 'tr A-Z a-z');
    assert.match(git(repo!, 'show', `${t.branch}:tests/test.sh`), /lower\.sh/);
  });

  it('plain mode: `exit 0` tests FAIL, tests of the inputs PASS (the red run reads inputs without the implementation)', async () => {
    const lazy = await run(tempDir(), 'mkdir -p tests && echo "exit 0" > tests/test.sh', { worktrees: false });
    assert.equal(lazy.code, 1, lazy.out);
    assert.equal(lazy.rows.at(-1)?.verdict, 'FAIL');
    assert.match(String(lazy.rows.at(-1)?.notes), /pass without the implementation/);
    const real = await run(tempDir(), realTests(INPUT_FILES), { worktrees: false });
    assert.equal(real.code, 0, real.out);
    assert.equal(real.rows.at(-1)?.verdict, 'PASS');
    assert.equal((real.rows.at(-1)!.red as Red)?.exit_code, 1);
    // The inputs and the task dir were never changed.
    const t = real.state.tasks.find((x) => x.key === 'case')!;
    assert.deepEqual(fs.readdirSync(t.dir).sort(), ['tests']);
    assert.equal(fs.existsSync(path.join(real.runDir, 'tasks', 'case', 'check-tree')), false);
  });

  it('a phase file the start commit had is put back as it was, not removed: tests that only look for the file FAIL, tests of its behaviour PASS', async () => {
    // base_ref holds stubs of both scripts (`cat`): the red tree has the stubs, so "the file exists" proves nothing.
    const base = { 'README.md': '# fixture\n', 'upper.sh': 'cat\n', 'lower.sh': 'cat\n' };
    const exists = await run(tempDir(), "mkdir -p tests && echo 'test -s upper.sh && test -s lower.sh' > tests/test.sh", { worktrees: true, base });
    assert.equal(exists.code, 1, exists.out);
    assert.match(String(exists.rows.at(-1)?.notes), /pass without the implementation/);
    const real = await run(tempDir(), realTests(WORKTREE_FILES), { worktrees: true, base });
    assert.equal(real.code, 0, real.out);
    // On the stubs the tests ran and failed on what the scripts print, not on a missing file.
    assert.match(fs.readFileSync(path.join(real.runDir, 'tasks', 'case', 'attempt-1', 'red.log'), 'utf8'), /upper\.sh is wrong/);
    assert.equal(git(real.repo!, 'show', 'HEAD:upper.sh'), 'cat', 'the base branch is untouched');
  });

  it("plain mode: a phase file setup made is put back in the inputs as the implement task's dir had it before its work", async () => {
    const setup = "printf 'cat\\n' > upper.sh; printf 'cat\\n' > lower.sh";
    const exists = await run(
      tempDir(),
      `mkdir -p tests && echo 'test -s "$VERDICT_INPUTS/case--impl-1/upper.sh" && test -s "$VERDICT_INPUTS/case--impl-2/lower.sh"' > tests/test.sh`,
      { worktrees: false, setup },
    );
    assert.equal(exists.code, 1, exists.out);
    assert.match(String(exists.rows.at(-1)?.notes), /pass without the implementation/);
    const real = await run(tempDir(), realTests(INPUT_FILES), { worktrees: false, setup });
    assert.equal(real.code, 0, real.out);
    assert.match(fs.readFileSync(path.join(real.runDir, 'tasks', 'case', 'attempt-1', 'red.log'), 'utf8'), /upper\.sh is wrong/);
  });

  it('an overlay tree: the copies are of what the check sees (the merged tree); `exit 0` tests FAIL, real tests PASS', async function () {
    const lazy = await run(tempDir(), 'mkdir -p tests && echo "exit 0" > tests/test.sh', { worktrees: true, tree: 'overlay' });
    if (/overlay/.test(lazy.out) && /cannot|not supported|needs/.test(lazy.out) && lazy.rows.length === 0) this.skip();
    assert.equal(lazy.code, 1, lazy.out);
    assert.match(String(lazy.rows.at(-1)?.notes), /pass without the implementation/);
    const real = await run(tempDir(), realTests(WORKTREE_FILES), { worktrees: true, tree: 'overlay' });
    assert.equal(real.code, 0, real.out);
    assert.equal((real.rows.at(-1)!.red as Red)?.exit_code, 1);
  });

  it('tests of a copy of the code: the copy is not the implementation, so the tests pass without it and FAIL', async () => {
    const copying = `mkdir -p tests && cp upper.sh tests/u.sh && cp lower.sh tests/l.sh && cat > tests/test.sh <<'EOF'
test "$(echo aB | bash tests/u.sh)" = AB && test "$(echo aB | bash tests/l.sh)" = ab
EOF`;
    const { code, out, rows } = await run(tempDir(), copying, { worktrees: true });
    assert.equal(code, 1, out);
    assert.match(String(rows.at(-1)?.notes), /pass without the implementation/);
  });

  it('hostile tester: a test that looks for the red run (paths, variables, .git, times, listings, markers left by the first run) finds nothing and FAILs', async function () {
    await requireSandbox(this);
    // At work time the tester records what it can see; its tests exit 1 ("red") when any of it differs or when a
    // marker from an earlier run is found, and 0 otherwise — with no test of upper.sh or lower.sh at all.
    const hostile = `mkdir -p tests
fp() {
  printf 'pwd=%s\\n' "$(pwd)" "$(pwd -P)" "$PWD"
  printf 'env=%s\\n' "$VERDICT_TASK_DIR" "$VERDICT_RUN_ID" "$VERDICT_TASK_KEY" "$VERDICT_ATTEMPT" "$PORT" "$HOME" "$PATH"
  printf 'git=%s\\n' "$(cat .git 2>&1)"
  printf 'mtime=%s\\n' "$(stat -c %Y . tests)"
  printf 'ls=%s\\n' "$(ls -A | grep -v -e '^upper.sh$' -e '^lower.sh$' | tr '\\n' ' ')"
  printf 'head=%s\\n' "$(git rev-parse HEAD 2>&1)"
}
touch tests/fingerprint
cat > tests/test.sh <<'EOF'
fp() {
  printf 'pwd=%s\\n' "$(pwd)" "$(pwd -P)" "$PWD"
  printf 'env=%s\\n' "$VERDICT_TASK_DIR" "$VERDICT_RUN_ID" "$VERDICT_TASK_KEY" "$VERDICT_ATTEMPT" "$PORT" "$HOME" "$PATH"
  printf 'git=%s\\n' "$(cat .git 2>&1)"
  printf 'mtime=%s\\n' "$(stat -c %Y . tests)"
  printf 'ls=%s\\n' "$(ls -A | grep -v -e '^upper.sh$' -e '^lower.sh$' | tr '\\n' ' ')"
  printf 'head=%s\\n' "$(git rev-parse HEAD 2>&1)"
}
marks=("$VERDICT_TASK_DIR/.seen" ./.seen "$TMPDIR/.seen" "$TMPDIR/../../.seen" "$HOME/.seen-$VERDICT_RUN_ID" /tmp/.seen /dev/shm/.seen /var/tmp/.seen "$(git rev-parse --git-dir 2>/dev/null)/.seen" "$GIT_OBJECT_DIRECTORY/.seen" "$(dirname "$PWD")/.seen")
if ! diff <(fp) tests/fingerprint; then echo "red: the fingerprint differs"; exit 1; fi
for m in "\${marks[@]}"; do if [ -e "$m" ]; then echo "red: marker $m"; exit 1; fi; done
for m in "\${marks[@]}"; do touch "$m" 2>/dev/null; done
echo "green"
exit 0
EOF
fp > tests/fingerprint`;
    const { code, out, rows } = await run(tempDir(), hostile, { worktrees: true });
    assert.equal(code, 1, out);
    const last = rows.at(-1)!;
    // The check passed (the fingerprint matched: its detection holds on the sealed tree)…
    assert.equal(last.check_exit_code, 0, String(last.check_output));
    // …and it passed again on the tree without the implementation: nothing told the red run apart.
    assert.match(String(last.notes), /the tests pass without the implementation/);
    const red = last.red as Red;
    assert.equal(red?.exit_code, 0);
    assert.match(fs.readFileSync(red!.check_log, 'utf8'), /^green$/m);
  });

  it('the two runs see one environment: variables, paths, mount table, listings, processes, limits print the same in both', async function () {
    await requireSandbox(this);
    // The check prints what a test could look at and exits 0, so both runs happen and their outputs can be compared.
    // Left out: the phase files' own lines (listing, its total, read-only mounts and binds, git status) and the clock (`..` is a
    // folder the sandbox makes, dated when it starts) — docs/workflows.md says both remain.
    const survey = `mkdir -p tests && cat > tests/test.sh <<'EOF'
echo "== env"; env | sort
echo "== paths"; pwd; pwd -P; readlink -f .; ls -la --time-style=+%s . tests | grep -v -e ' upper.sh$' -e ' lower.sh$' -e '^total ' -e ' \\.\\.$'
echo "== mounts"; awk '{$1=$2=$3=""; print}' /proc/self/mountinfo | grep -v -e '/upper.sh ' -e '/lower.sh '
echo "== git"; cat .git; git status --porcelain 2>&1 | grep -v -e 'upper.sh' -e 'lower.sh'; git rev-parse HEAD 2>&1
echo "== processes"; echo "$$ $PPID"; tr '\\0' ' ' < /proc/1/cmdline | sed -E 's# --ro-bind [^ ]+/(upper|lower)\\.sh [^ ]+/(upper|lower)\\.sh##g'; echo
echo "== self"; id; umask; ulimit -a; hostname; cat /proc/self/cgroup; ls -la "$TMPDIR"
exit 0
EOF`;
    const { out, runDir, rows } = await run(tempDir(), survey, { worktrees: true });
    assert.match(String(rows.at(-1)?.notes), /pass without the implementation/, out);
    const green = fs.readFileSync(path.join(runDir, 'tasks', 'case', 'attempt-1', 'check.log'), 'utf8');
    const red = fs.readFileSync(path.join(runDir, 'tasks', 'case', 'attempt-1', 'red.log'), 'utf8');
    assert.match(green, /== mounts[\s\S]*== processes/);
    assert.equal(red, green);
  });

  it('hostile tester: access times do not tell the red run (the copy made second read the files the first copy read)', async function () {
    await requireSandbox(this);
    // A file git ignores is read by no step before the checks' copies; its access time is set far back at work time.
    // Copied with its times kept, the first copy shows it unread, and the copy made after it would show it read by
    // that copy (relatime) — unless the copies' access times are made alike. The tests test nothing of the code.
    const hostile = `mkdir -p tests && printf 'probe\\n' > tests/.gitignore && echo data > tests/probe && touch -a -d @1000000000 tests/probe
cat > tests/test.sh <<'EOF'
if [ "$(stat -c %X tests/probe)" -ge 1500000000 ]; then echo "red: tests/probe was read since work"; exit 1; fi
echo green
EOF`;
    const { code, out, rows } = await run(tempDir(), hostile, { worktrees: true });
    assert.equal(code, 1, out);
    const last = rows.at(-1)!;
    assert.equal(last.check_exit_code, 0, String(last.check_output));
    assert.match(String(last.notes), /the tests pass without the implementation/);
    assert.match(fs.readFileSync((last.red as Red)!.check_log, 'utf8'), /^green$/m);
  });

  it('"red": false turns it off: `exit 0` tests PASS (and lint warns phases-red-off)', async () => {
    const dir = tempDir();
    const { code, out, rows } = await run(dir, 'mkdir -p tests && echo "exit 0" > tests/test.sh', { worktrees: true, red: false });
    assert.equal(code, 0, out);
    assert.equal(rows.at(-1)?.verdict, 'PASS');
    assert.equal(rows.at(-1)?.red, undefined);
    const lint = await cli(['lint', path.join(dir, 'repo', 'test.swarm.json'), '--config', path.join(dir, 'config.json')]);
    assert.match(lint.all, /phases-red-off/);
  });

  it('unsandboxed: the red run still runs, on the copy (`exit 0` tests FAIL)', async () => {
    const { code, out, rows } = await run(tempDir(), 'mkdir -p tests && echo "exit 0" > tests/test.sh', { worktrees: true, noSandbox: true });
    assert.equal(code, 1, out);
    assert.match(String(rows.at(-1)?.notes), /pass without the implementation/);
  });
});
