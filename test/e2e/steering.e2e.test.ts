import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

/** A profile in Ringer's format 1 with a confirmed, a candidate and a refuted worker rule and one driver rule. */
const PROFILE = `---
kind: steering-profile
format: 1
model: steer-1
profile_version: 0.2.0
---

# steer-1

## R1 · read-the-spec-file

\`\`\`yaml
id: read-the-spec-file
status: confirmed
audience: worker
\`\`\`

**Inject:** Read NOTES.txt before you change anything.

## R2 · small-commits

\`\`\`yaml
id: small-commits
status: candidate
audience: worker
\`\`\`

**Inject:** Keep each change small.

## R3 · shout

\`\`\`yaml
id: shout
status: refuted
audience: worker
\`\`\`

**Inject:** WRITE EVERYTHING IN CAPITALS.

## R4 · spec-as-file

\`\`\`yaml
id: spec-as-file
status: confirmed
audience: driver
\`\`\`

**Inject:** Put hard constraints in a file the spec names.
`;

/** A config with an engine that runs a model-like CLI: bash appending a line whatever the prompt (its $1). */
function configWithEngine(dir: string): string {
  const base = process.env.VERDICT_CONFIG ? JSON.parse(fs.readFileSync(process.env.VERDICT_CONFIG, 'utf8')) : {};
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      ...base,
      engines: { appender: { binary: 'bash', argv: ['-c', 'echo x >> count.txt', 'worker', '{spec}'], install: 'a test fixture', output: 'none' } },
    }),
  );
  return file;
}

function prompts(home: string, key: string): string[] {
  const runId = fs.readdirSync(path.join(home, 'runs'))[0]!;
  const dir = path.join(home, 'runs', runId, 'tasks', key);
  return fs
    .readdirSync(dir)
    .filter((d) => /^attempt-\d+$/.test(d))
    .sort()
    .map((n) => fs.readFileSync(path.join(dir, n, 'prompt.md'), 'utf8'));
}

describe('steering profiles (built CLI, script engine)', function () {
  this.timeout(180000);

  it("worker rules go in front of attempt 1's prompt and the retry's; refuted and driver rules never; driver notes shown before the run; one observation row per attempt", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const steering = path.join(dir, 'steering');
    fs.mkdirSync(path.join(steering, 'profiles'), { recursive: true });
    fs.writeFileSync(path.join(steering, 'profiles', 'steer-1.md'), PROFILE);
    const repo = makeRepo(path.join(dir, 'repo'));
    // Attempt 1 fails (one line), the retry passes (two lines): the check says why it failed.
    const manifest = writeManifest(repo, {
      run_name: 'steered',
      worktrees: true,
      tasks: [
        scriptTask('t', 'Append a line to count.txt.', 'test "$(wc -l < count.txt)" -ge 2 || { echo "need two lines"; exit 1; }', {
          engine: 'appender',
          model: 'acme/steer-1',
          max_attempts: 2,
        }),
      ],
    });
    const r = await cli(['run', manifest, '--home', home, '--no-dashboard', '--config', configWithEngine(dir)], {
      env: { VERDICT_STEERING_DIR: steering, VERDICT_IDENTITY: 't' },
    });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stderr, /Steering notes for steer-1 \(v0\.2\.0\).*\n- \(confirmed\) Put hard constraints in a file the spec names\./);
    const [p1, p2] = prompts(home, 't');
    assert.ok(p1 && p2, 'two attempts');
    for (const p of [p1, p2]) {
      assert.ok(
        p.startsWith(
          '[Steering profile steer-1 v0.2.0, injected by Verdict]\n- Read NOTES.txt before you change anything.\n- (candidate) Keep each change small.\n[End steering profile]\n\n',
        ),
        p,
      );
      assert.doesNotMatch(p, /CAPITALS|hard constraints/);
    }
    assert.ok(p1.endsWith('\n\nAppend a line to count.txt.'), p1);
    assert.match(
      p2,
      /\n\nAppend a line to count\.txt\.\n\n---\nA previous attempt at this task did not pass\.[\s\S]*need two lines/,
      'the retry: rules, spec, then the failure',
    );
    const obsDir = path.join(steering, 'observations', 'verdict');
    const obs = fs
      .readdirSync(obsDir)
      .flatMap((f) => fs.readFileSync(path.join(obsDir, f), 'utf8').trim().split('\n'))
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      obs.map((o) => [o.task_key, o.attempt, o.retry, o.verdict, o.profile, o.profile_version]),
      [
        ['t', 1, false, 'FAIL', 'steer-1', '0.2.0'],
        ['t', 2, true, 'PASS', 'steer-1', '0.2.0'],
      ],
    );
    assert.deepEqual(obs[0].rules_injected, ['steer-1/read-the-spec-file', 'steer-1/small-commits']);
    assert.match(obs[0].check_excerpt, /need two lines/);
  });

  it('a malformed profile is skipped with one note for the whole run; the run goes on unsteered', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const steering = path.join(dir, 'steering');
    fs.mkdirSync(path.join(steering, 'profiles'), { recursive: true });
    fs.writeFileSync(path.join(steering, 'profiles', 'steer-1.md'), '# no front matter\n\n## R1 · x\n\nnothing here\n');
    const repo = makeRepo(path.join(dir, 'repo'));
    const manifest = writeManifest(repo, {
      run_name: 'unsteered',
      worktrees: true,
      tasks: ['a', 'b'].map((k) =>
        scriptTask(k, `Task ${k}.`, 'test "$(wc -l < count.txt)" -ge 2 || { echo again; exit 1; }', { engine: 'appender', model: 'steer-1', max_attempts: 2 }),
      ),
    });
    const r = await cli(['run', manifest, '--home', home, '--no-dashboard', '--config', configWithEngine(dir)], {
      env: { VERDICT_STEERING_DIR: steering, VERDICT_IDENTITY: 't' },
    });
    assert.equal(r.exitCode, 0, r.all);
    const notes = r.all!.split('\n').filter((l) => /steering: skipped .*steer-1\.md: no front matter/.test(l));
    // Once before the run (driver notes) and once during it, however many tasks and attempts use the model.
    assert.equal(notes.filter((l) => /the run goes on without it/.test(l)).length, 1, r.all);
    assert.equal(notes.length, 2, r.all);
    for (const key of ['a', 'b']) {
      const [p1, p2] = prompts(home, key);
      assert.equal(p1, `Task ${key}.`);
      assert.ok(p2!.startsWith(`Task ${key}.\n\n---\nA previous attempt`), p2);
    }
  });
});
