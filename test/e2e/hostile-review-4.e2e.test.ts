import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { merge, run, workVerdicts } from '../helpers/review-run';
import { requireSandbox } from '../helpers/sandbox-env';

// Hostile review 4 (2026-12-07): each case reproduces one finding against the build it was found on (02da8b2); each
// failed there and passes with its fix (run/undelivered.ts judgeCommitted for a folder; git/merge.ts reading the rebased
// commit before the re-check and through the repository's own git). The assertion states the correct outcome.

const opts = { max_attempts: 1, network: false };

/**
 * A program the check runs (`bash answer.sh | grep -x 9`) that prints 9, as asked, and at merge time (VERDICT_ATTEMPT=merge)
 * points the merge checkout's .git at a git dir of its own whose HEAD is the integration branch's head, sharing the
 * repository's objects.
 */
const FORGING_ANSWER = [
  'if [ "$VERDICT_ATTEMPT" = merge ]; then',
  '  c=$(git rev-parse --path-format=absolute --git-common-dir)',
  '  mkdir -p .own; cp "$c/HEAD" .own/HEAD; echo "$c" > .own/commondir; echo "$PWD/.git" > .own/gitdir',
  '  echo "gitdir: $PWD/.own" > .git',
  'fi',
  'echo 9',
].join('\n');

/** Shell that writes FORGING_ANSWER to answer.sh. */
const WRITE_FORGING_ANSWER = `echo ${Buffer.from(FORGING_ANSWER + '\n').toString('base64')} | base64 -d > answer.sh`;

/** A check.sh that is strict (answer.txt must say 42) only when setup's build/env.sh says STRICT=1. */
const STRICT_WITH_BUILD_ENV =
  'set -e\nif [ -f build/env.sh ]; then . ./build/env.sh; fi\nif [ "${STRICT:-0}" = 1 ]; then grep -x 42 answer.txt; else echo lenient; fi\n';

describe('hostile review 4: ways around the seal, the merge queue and best-of-N', function () {
  this.timeout(240000);
  before(async function () {
    await requireSandbox(this);
  });

  it("a worker that replaces setup's ignored folder by a committed link to its own folder (build -> mine, .gitignore untouched): not PASS, not merged", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { '.gitignore': 'build/\n', 'check.sh': STRICT_WITH_BUILD_ENV });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      setup: '[ -f build/env.sh ] || { mkdir -p build && echo STRICT=1 > build/env.sh; }',
      // `build/` matches folders only: a link named build is not ignored, and neither is mine/. Both are committed.
      tasks: [scriptTask('t', 'rm -rf build; mkdir mine; echo STRICT=0 > mine/env.sh; ln -s mine build; echo 41 > answer.txt', 'bash check.sh', opts)],
    });
    const r = await run(file, dir);
    // Was: t PASS ("lenient"), and `verdict merge` merged it. run/undelivered.ts SealSorter.passBy finds
    // build/env.sh not `present` (its parent is a link), cannot put it back through the link, and names it only as
    // missing (a note); judgeCommitted is never asked, since the link `build` is a folder record ('d') to it.
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
    const m = await merge(dir, repo);
    assert.doesNotMatch(m.all ?? '', /t: MERGED/, m.all);
    assert.equal(git(repo, 'ls-tree', 'HEAD', 'build'), '', "main holds the worker's link in place of setup's build/");
  });

  it("a re-check that repoints the merge checkout's .git (the program the check runs is the worker's): the later merge that deletes an earlier task's file is not MERGED", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    // d's program (the check runs it: `bash answer.sh | grep -x 9`) prints 9, as asked. At merge time it also points the
    // checkout's .git at a git dir of its own whose HEAD is the integration branch's head, sharing the repository's
    // objects: the queue then reads "HEAD" there as the rebased commit and finds it changes nothing.
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [
        scriptTask('a', 'echo 42 > a.txt', 'grep -x 42 a.txt', { ...opts, expect_files: ['a.txt'] }),
        scriptTask('d', `rm a.txt; ${WRITE_FORGING_ANSWER}`, 'bash answer.sh | grep -x 9', { ...opts, after: ['a'] }),
      ],
    });
    const r = await run(file, dir);
    assert.equal(r.exitCode, 0, r.all);
    const m = await merge(dir, repo);
    // Was: "a: MERGED", "d: MERGED", and main lost a.txt. Without the .git rewrite d is CHECK_FAILED ("it changes
    // what a delivered earlier in this queue (a.txt)"). git/merge.ts mergeTask reads the rebased commit and the paths
    // it delivers (deliveredPaths) through gitFor(dir) after the re-check ran in `dir`, so from the .git file that
    // the code the check ran could rewrite; breaksEarlier and the suite judge that commit, the fast-forward lands
    // req.branch.
    assert.doesNotMatch(m.all ?? '', /d: MERGED/, m.all);
    assert.ok(fs.existsSync(path.join(repo, 'a.txt')), `${m.all}\nmain lost a.txt, which task a passed and was merged with`);
  });

  it("a re-check that repoints the merge checkout's .git: the suite on the integration branch judges the base, and the merge that breaks it is not MERGED", async () => {
    const dir = tempDir();
    // merge-suite's budget: the numbers in limits/*.txt must add up to at most 10 (base 3); t1 and t2 each add 4 and
    // pass alone (7), together they make 11.
    const repo = makeRepo(path.join(dir, 'repo'), {
      'limits/base.txt': '3\n',
      'ci/suite.sh': 'n=0; for f in limits/*.txt; do n=$((n + $(cat "$f"))); done; [ "$n" -le 10 ] || { echo "the limits add up to $n"; exit 1; }\n',
    });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 1,
      suite: 'bash ci/suite.sh',
      tasks: [
        scriptTask('t1', 'echo 4 > limits/t1.txt', 'grep -x 4 limits/t1.txt', opts),
        scriptTask('t2', `echo 4 > limits/t2.txt; ${WRITE_FORGING_ANSWER}`, 'bash answer.sh | grep -x 9', opts),
      ],
    });
    const r = await run(file, dir);
    assert.equal(r.exitCode, 0, r.all);
    const m = await merge(dir, repo);
    // Was: "t1: MERGED", "t2: MERGED", and main's limits add up to 11: the suite ran on the commit
    // `rebased` read through the rewritten .git (main's head with t1 only), not on the merge it fast-forwarded to.
    // Without the rewrite t2 is SUITE_FAILED (merge-suite.e2e.test.ts).
    assert.doesNotMatch(m.all ?? '', /t2: MERGED/, m.all);
    assert.ok(!fs.existsSync(path.join(repo, 'limits', 't2.txt')), `${m.all}\nmain fails its suite after the merge`);
  });
});
