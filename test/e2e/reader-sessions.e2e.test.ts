import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// A read-only reader must not learn whose work it judges from its engine's session logs (docs/containment.md "Engine
// sessions"). The engine here, `fake`, plays a CLI with a state dir (~/.fake: a login, auth.json, and sessions/ where
// every run leaves a session file naming its task, as codex's ~/.codex/sessions holds a candidate's transcript). The
// workers and the readers are all `fake`; every reader looks everywhere it can for a session naming a task and for
// its login, and says what it found.

/** This checkout (mocha runs from the project's root). */
const PROJECT = process.cwd();

/** The binary of engine `fake`: a worker's spec is a bash script; a ranking reviewer is recognised by its A.diff. */
const FAKE = [
  '#!/bin/bash',
  'login=$(cat ~/.fake/auth.json 2>/dev/null)',
  'probe() {',
  '  echo "login: ${login:-none}"',
  '  echo "sessions: $(ls -A ~/.fake/sessions 2>/dev/null | tr "\\n" " ")"',
  // every file under the home and /tmp that names a task key (fix--c1, q--a2): a session another run left. Verdict's
  // own checkout is passed over: its test sources name those keys, and a clone may well live under /tmp (a CI's does).
  `  for f in $(find ~ /tmp -path ${JSON.stringify(PROJECT)} -prune -o -type f -print0 2>/dev/null | xargs -0 grep -lE -e "(fix--c|q--a)[0-9]" 2>/dev/null | head -5); do echo "LEAK: $f: $(head -c 100 "$f")"; done`,
  '}',
  'mkdir -p ~/.fake/sessions ~/.other/sessions',
  'if [ -e A.diff ]; then',
  '  probe',
  '  echo "session of a ranking reviewer" > ~/.fake/sessions/reader-$$.jsonl',
  '  echo \'{"scores": {"A": 5, "B": 5}}\'',
  'else',
  '  echo "session of $VERDICT_TASK_KEY" > ~/.fake/sessions/"$VERDICT_TASK_KEY"-$$.jsonl',
  '  echo "session of $VERDICT_TASK_KEY" > ~/.other/sessions/"$VERDICT_TASK_KEY"-$$.jsonl',
  '  export -f probe; export login',
  // The prompt runs as a script (its prose lines fail as commands); like a real CLI whose session ended, the engine
  // then exits 0 (a reader of inputs that did not is an ERROR: run/reader-end.ts).
  '  bash -c "$1"; exit 0',
  'fi',
].join('\n');

function fakeEngine(dir: string): { config: string; env: Record<string, string>; userHome: string } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, 'fake-engine'), `${FAKE}\n`, { mode: 0o755 });
  const userHome = path.join(dir, 'user');
  fs.mkdirSync(path.join(userHome, '.fake'), { recursive: true });
  fs.writeFileSync(path.join(userHome, '.fake', 'auth.json'), 'token-7');
  const config = path.join(dir, 'config.json');
  // `other`: the same CLI under another engine name, with its own state dir (~/.other), as claude is to codex.
  const fake = {
    binary: 'fake-engine',
    argv: ['{spec}'],
    install: 'a test fixture',
    output: 'none',
    state_dirs: ['~/.fake'],
    state_shared: ['~/.fake/auth.json'],
  };
  fs.writeFileSync(config, JSON.stringify({ engines: { fake, other: { ...fake, state_dirs: ['~/.other'], state_shared: [] } } }));
  return { config, env: { PATH: `${bin}:${process.env.PATH}`, HOME: userHome }, userHome };
}

function sessionsLeft(userHome: string): string[] {
  return fs
    .readdirSync(path.join(userHome, '.fake', 'sessions'))
    .map((f) => f.replace(/-\d+\.jsonl$/, ''))
    .sort();
}

describe('readers do not see the engine sessions of the work they judge', function () {
  this.timeout(240000);
  before(async function () {
    await requireSandbox(this);
  });

  it("ranked: a ranking reviewer on the candidates' own engine finds its login and no candidate's session", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const { config, env, userHome } = fakeEngine(dir);
    const file = writeManifest(repo, {
      worktrees: true,
      max_parallel: 2,
      tasks: [
        scriptTask('fix', 'echo "work of $VERDICT_CANDIDATE" > out.txt', 'test -s out.txt', {
          repeat: 2,
          candidates: [
            { engine: 'fake', model: 'm1' },
            { engine: 'fake', model: 'm2' },
          ],
          select: 'ranked',
          max_attempts: 1,
          rank: { rubric: 'Any.', engines: [{ engine: 'fake', model: 'judge' }] },
        }),
      ],
    });
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    // The candidates did leave their sessions in the shared state dir (so there was something to find) …
    assert.deepEqual(sessionsLeft(userHome), ['fix--c1', 'fix--c2']);
    const rank = readRows(home).filter((x) => x.step === 'rank');
    assert.equal(rank.length, 1);
    const log = fs.readFileSync(String(rank[0]?.worker_log), 'utf8');
    // … and the ranker saw its login, an empty sessions folder, nothing naming a candidate; its own session is gone.
    assert.match(log, /^login: token-7$/m, log);
    assert.match(log, /^sessions: $/m, log);
    assert.doesNotMatch(log, /LEAK/, log);
    assert.equal(rank[0]?.verdict, 'PASS', log);
  });

  it("council: the reviewers and the chair, on the members' own engine, find their login and no member's session", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const { config, env, userHome } = fakeEngine(dir);
    const file = writeManifest(repo, {
      worktrees: true,
      max_parallel: 2,
      tasks: [
        scriptTask('q', 'echo "answer $RANDOM" > answer.md', 'test -s answer.md', {
          council: {
            members: [
              { engine: 'fake', model: 'm1' },
              { engine: 'fake', model: 'm2' },
            ],
            review: { spec: 'probe > review.md' },
            chair: {
              engine: 'fake',
              model: 'chair',
              spec: 'probe > synthesis.md',
              check: 'grep -q "^login: token-7$" synthesis.md && ! grep -q LEAK synthesis.md',
            },
          },
        }),
      ],
    });
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const [id] = fs.readdirSync(path.join(home, 'runs'));
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as {
      tasks: { key: string; status: string; dir: string }[];
    };
    assert.deepEqual(state.tasks.map((t) => [t.key, t.status]).sort(), [
      ['q', 'PASS'],
      ['q--a1', 'PASS'],
      ['q--a2', 'PASS'],
      ['q--r1', 'PASS'],
      ['q--r2', 'PASS'],
    ]);
    // Every member left a session; the reviewers and the chair (tasks with inputs) saw none of them, and theirs are gone.
    assert.deepEqual(sessionsLeft(userHome), ['q--a1', 'q--a2']);
    for (const [key, out] of [
      ['q--r1', 'review.md'],
      ['q--r2', 'review.md'],
      ['q', 'synthesis.md'],
    ] as const) {
      const seen = fs.readFileSync(path.join(state.tasks.find((t) => t.key === key)!.dir, out), 'utf8');
      assert.match(seen, /^login: token-7$/m, `${key}: ${seen}`);
      // its own session only (the engine writes one for every run), which is gone after it
      assert.match(seen, new RegExp(`^sessions: (${key}-\\d+\\.jsonl )?$`, 'm'), `${key}: ${seen}`);
      assert.doesNotMatch(seen, /LEAK/, `${key}: ${seen}`);
    }
  });

  it("council over two engines: a reviewer finds no session the other engine's member left in that engine's state dir", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const { config, env, userHome } = fakeEngine(dir);
    const file = writeManifest(repo, {
      worktrees: true,
      max_parallel: 2,
      tasks: [
        scriptTask('q', 'echo "answer $RANDOM" > answer.md', 'test -s answer.md', {
          council: {
            members: [
              { engine: 'fake', model: 'm1' },
              { engine: 'other', model: 'm2' },
            ],
            review: { spec: 'probe > review.md' },
            chair: { engine: 'fake', model: 'chair', spec: 'probe > synthesis.md', check: 'test -s synthesis.md' },
          },
        }),
      ],
    });
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const [id] = fs.readdirSync(path.join(home, 'runs'));
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as {
      tasks: { key: string; status: string; dir: string }[];
    };
    // The `other` member left its session in ~/.other (the fake binary writes one there whatever its engine) …
    assert.ok(fs.readdirSync(path.join(userHome, '.other', 'sessions')).some((f) => f.startsWith('q--a2-')));
    // … and no reviewer nor the chair, whatever its engine, saw a member's session in the other engine's state dir.
    for (const [key, out] of [
      ['q--r1', 'review.md'],
      ['q--r2', 'review.md'],
      ['q', 'synthesis.md'],
    ] as const) {
      const seen = fs.readFileSync(path.join(state.tasks.find((t) => t.key === key)!.dir, out), 'utf8');
      assert.match(seen, /^sessions: /m, `${key}: ${seen}`);
      assert.doesNotMatch(seen, /LEAK/, `${key}: ${seen}`);
    }
  });
});
