import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// Hostile reviewers against the anonymity of a council (docs/workflows.md "Council": "Names hidden"). A reviewer or the
// chair that can tell which letter is whose can favour a model or settle scores; each probe below writes what it
// learnt into the only file the task may change, and the test fails when it learnt a name.

interface StateJson {
  inputNames?: Record<string, Record<string, string>>;
  tasks: { key: string; status: string; dir: string }[];
}

function stateOf(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}

// Every answer differs (and does not carry its author's key), so a copy can be matched against what git holds.
const QUESTION = 'echo "## Answer" > answer.md; echo "answer $(head -c 8 /dev/urandom | od -An -tx1 | tr -d " \\n")" >> answer.md';

// The probes: the repository's branches and commit messages (the seal writes the task key into each), every object
// git can list, and the order in which the copies were written (mtime, ns), which is the order of `from` unless the
// copy hides it. "order:" lists the letters oldest first.
const PROBES = [
  'exec > "$OUT"',
  'echo "refs: $(git for-each-ref --format="%(refname)" 2>/dev/null | tr "\\n" " ")"',
  'echo "log: $(git log --all --format=%s 2>/dev/null | tr "\\n" " ")"',
  'for d in "$VERDICT_INPUTS"/answers/*/; do L=$(basename "$d"); for ref in $(git for-each-ref --format="%(refname)" 2>/dev/null); do if git show "$ref:answer.md" 2>/dev/null | cmp -s - "$d/answer.md"; then echo "match: $L=$ref"; fi; done; done',
  'echo "objects: $(git cat-file --batch-all-objects --batch-check 2>/dev/null | grep -c commit)"',
  'echo "order: $(cd "$VERDICT_INPUTS/answers" && stat -c "%.9Y %n" */answer.md | sort -n | cut -d/ -f1 | cut -d" " -f2 | tr "\\n" " ")"',
].join('\n');

function council(chairCheck: string): Record<string, unknown> {
  return scriptTask('q', QUESTION, 'grep -q "^answer " answer.md', {
    council: {
      members: [
        { engine: 'script', model: 'm1' },
        { engine: 'script', model: 'm2' },
        { engine: 'script', model: 'm3' },
      ],
      review: { spec: `OUT=review.md\n${PROBES}` },
      chair: { engine: 'script', model: 'chair', spec: `OUT=synthesis.md\n${PROBES}\necho '## Unresolved disagreements'; echo none`, check: chairCheck },
    },
  });
}

function assertLearntNothing(seen: string, who: string): void {
  assert.doesNotMatch(seen, /q--[ar]\d/, `${who} learnt whose answer is whose:\n${seen}`);
  assert.doesNotMatch(seen, /^match: /m, `${who} matched a letter to a branch:\n${seen}`);
  // The copies are written in the letters' order, whatever the members' order.
  const order = /^order: (.*)$/m.exec(seen)?.[1]?.trim().split(' ') ?? [];
  assert.ok(order.length >= 2, `${who} saw no answers:\n${seen}`);
  assert.deepEqual(order, [...order].sort(), `${who}: the copies' write order gives away the members' order:\n${seen}`);
}

describe('hostile: a council member cannot learn whose answer is whose', function () {
  this.timeout(240000);

  it("worktree mode: no branch, commit message, object or write order names a letter's author", async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const file = writeManifest(repo, { worktrees: true, max_parallel: 3, tasks: [council('grep -qx "## Unresolved disagreements" synthesis.md')] });
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => t.status),
      Array(7).fill('PASS'),
    );
    for (const k of ['q--r1', 'q--r2', 'q--r3'])
      assertLearntNothing(fs.readFileSync(path.join(state.tasks.find((t) => t.key === k)!.dir, 'review.md'), 'utf8'), k);
    assertLearntNothing(fs.readFileSync(path.join(state.tasks.find((t) => t.key === 'q')!.dir, 'synthesis.md'), 'utf8'), 'the chair');
  });

  it("plain mode: the write order of the copies says nothing of the members' order", async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const file = writeManifest(dir, { workdir: 'w', max_parallel: 3, tasks: [council('grep -qx "## Unresolved disagreements" synthesis.md')] });
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => t.status),
      Array(7).fill('PASS'),
    );
    for (const k of ['q--r1', 'q--r2', 'q--r3'])
      assertLearntNothing(fs.readFileSync(path.join(state.tasks.find((t) => t.key === k)!.dir, 'review.md'), 'utf8'), k);
  });
});
