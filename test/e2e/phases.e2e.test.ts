import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { bashEngine, git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// Phases (docs/workflows.md "Phases"): implement → guard → review → test over a list of files. The
// implementers are script-engine tasks; the test writer is a custom engine (a bash script), another engine than theirs.

/** A config with the test writer `tester` (its bash body gets the prompt as $1), and the PATH that finds it. */
const tester = (dir: string, body: string) => bashEngine(dir, 'tester', body);

/** The tests the tester writes: each file's behaviour, as the task asks. */
const WRITE_TESTS = `mkdir -p tests && cat > tests/test.sh <<'EOF'
test "$(echo aB | bash upper.sh)" = AB || { echo "upper.sh: $(echo aB | bash upper.sh)"; exit 1; }
test "$(echo aB | bash lower.sh)" = ab || { echo "lower.sh: $(echo aB | bash lower.sh)"; exit 1; }
EOF`;

interface StateJson {
  tasks: { key: string; status: string; reason?: string; branch: string | null; commit: string | null }[];
}

async function run(dir: string, implement: string, testerBody: string) {
  const repo = makeRepo(path.join(dir, 'repo'));
  const task = scriptTask('case', implement, 'bash -n {file} && test -s {file}', {
    verified: '{file} is a bash script',
    phases: { files: ['upper.sh', 'lower.sh'], test: { engine: 'tester', check: 'bash tests/test.sh', expect_files: ['tests/test.sh'] } },
  });
  const file = writeManifest(repo, { worktrees: true, tasks: [task] });
  const { config, env } = tester(dir, testerBody);
  const home = path.join(dir, 'home');
  const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
  return { repo, code: r.exitCode, out: r.all, state, rows: readRows(home) };
}

const IMPLEMENT = `case {file} in upper.sh) echo 'tr a-z A-Z' > upper.sh ;; lower.sh) echo 'tr A-Z a-z' > lower.sh ;; esac`;

describe('phases: implement → guard → review → test, the tests written by another engine', function () {
  this.timeout(180000);

  it("one implement task per file, then the tester's tests run by the check on the merge of the implementations", async () => {
    const { repo, code, out, state, rows } = await run(tempDir(), IMPLEMENT, WRITE_TESTS);
    assert.equal(code, 0, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['case--impl-1', 'PASS'],
        ['case--impl-2', 'PASS'],
        ['case', 'PASS'],
      ],
    );
    assert.deepEqual(rows.map((r) => [r.task_key, r.worker_engine, r.model, r.verdict]).sort(), [
      ['case', 'tester', 'tester-1', 'PASS'],
      ['case--impl-1', 'script', null, 'PASS'],
      ['case--impl-2', 'script', null, 'PASS'],
    ]);
    // The test phase's branch holds both implementations (its start point) and its tests.
    const branch = String(state.tasks[2]!.branch);
    assert.equal(git(repo, 'show', `${branch}:upper.sh`), 'tr a-z A-Z');
    assert.equal(git(repo, 'show', `${branch}:lower.sh`), 'tr A-Z a-z');
    assert.match(git(repo, 'show', `${branch}:tests/test.sh`), /lower\.sh/);
  });

  it("a wrong implementation passes its own check but the other engine's tests fail it: the workflow does not pass", async () => {
    const wrong = IMPLEMENT.replace("echo 'tr A-Z a-z' > lower.sh", "echo 'cat' > lower.sh");
    const { code, out, state, rows } = await run(tempDir(), wrong, WRITE_TESTS);
    assert.equal(code, 1, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['case--impl-1', 'PASS'],
        ['case--impl-2', 'PASS'],
        ['case', 'FAIL'],
      ],
    );
    assert.match(String(rows.filter((r) => r.task_key === 'case').at(-1)?.check_output), /lower\.sh: aB/);
  });

  it('hostile tester: one that "fixes" the implementation to make its tests pass does not pass (the implementation is protected)', async () => {
    const wrong = IMPLEMENT.replace("echo 'tr A-Z a-z' > lower.sh", "echo 'cat' > lower.sh");
    const { repo, code, out, state, rows } = await run(tempDir(), wrong, `${WRITE_TESTS}\necho 'tr A-Z a-z' > lower.sh`);
    assert.equal(code, 1, out);
    const test = state.tasks[2]!;
    assert.equal(test.status, 'FAIL', out);
    // Sandboxed the write is refused (the tests then fail); unsandboxed the guard names the changed file.
    assert.match(
      rows
        .filter((r) => r.task_key === 'case')
        .map((r) => `${r.notes} ${r.check_output}`)
        .join('\n'),
      /lower\.sh/,
    );
    assert.equal(test.commit, null, 'nothing delivered');
    assert.equal(git(repo, 'show', `${state.tasks[1]!.branch}:lower.sh`), 'cat');
  });

  it('guard phase: an implementer that writes another file than its own FAILs naming it; the test phase is BLOCKED', async () => {
    const sprawl = IMPLEMENT.replace("echo 'tr a-z A-Z' > upper.sh", "echo 'tr a-z A-Z' > upper.sh; echo 'tr A-Z a-z' > lower.sh");
    const { code, out, state, rows } = await run(tempDir(), sprawl, WRITE_TESTS);
    assert.equal(code, 1, out);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['case--impl-1', 'FAIL'],
        ['case--impl-2', 'PASS'],
        ['case', 'BLOCKED'],
      ],
    );
    assert.match(String(rows.find((r) => r.task_key === 'case--impl-1')?.notes), /lower\.sh/);
  });
});
