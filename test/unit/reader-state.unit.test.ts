import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { builtinEngines } from '../../engines';
import { customEngineFromConfig } from '../../engines/custom';
import { bwrapCommand, expandStatePath } from '../../extension/core/process/sandbox';
import { engineState, otherEnginesState, readerStateView } from '../../extension/core/run/containment';
import { requireSandbox } from '../helpers/sandbox-env';

// What a read-only reader (ranking reviewer, council reviewer, validator…) sees of its engine's state
// (containment.ts readerStateView, sandbox.ts privateDirs/sharedPaths): each state dir its own empty folder with only
// the login and settings bound back, never the sessions another run left there.
describe("sandbox: a reader's own view of its engine's state", () => {
  const made: string[] = [];
  after(() => {
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });
  const mk = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-unit-state-'));
    made.push(d);
    return d;
  };

  it('readerStateView: state dirs become private, shared paths inside them are bound back, a shared state dir stays whole', () => {
    const view = readerStateView({
      dirs: ['/h/.codex', '/tmp/codex-daemon-0', '/h/.cache/opencode'],
      files: [],
      guarded: ['/h/.codex/config.toml'],
      shared: ['/h/.codex/auth.json', '/h/.codex/config.toml', '/h/.cache/opencode', '/h/.codexy/auth.json', '/elsewhere/x'],
    });
    assert.deepEqual(view, {
      writable: ['/h/.cache/opencode'],
      privateDirs: ['/h/.codex', '/tmp/codex-daemon-0'],
      // `/h/.codexy` is not inside `/h/.codex`; a path outside every state dir is not bound
      sharedPaths: ['/h/.codex/auth.json', '/h/.codex/config.toml'],
    });
  });

  it('every built-in engine shares only paths inside its own state dirs, and each shares its login', () => {
    const env = { HOME: '/h' };
    for (const engine of builtinEngines().values()) {
      const dirs = engine.stateDirs.map((t) => expandStatePath(t, env, '/h')).filter((d): d is string => d !== null);
      for (const t of engine.stateShared) {
        const p = expandStatePath(t, env, '/h');
        assert.ok(p && dirs.some((d) => p === d || p.startsWith(`${d}/`)), `${engine.name}: shared ${t} is in none of its state dirs ${dirs.join(', ')}`);
      }
      if (engine.stateDirs.length)
        assert.ok(
          engine.stateShared.some((t) => /auth|credential|oauth|user-settings/.test(t)),
          `${engine.name} shares no login`,
        );
    }
    assert.deepEqual(builtinEngines().get('script')?.stateShared, []);
  });

  it("a custom engine declares state_shared, else takes its output reader's", () => {
    const own = customEngineFromConfig('x', { binary: 'x', argv: ['{spec}'], state_dirs: ['~/.x'], state_shared: ['~/.x/token'] }, 'test');
    assert.deepEqual(own.stateShared, ['~/.x/token']);
    const codexLike = customEngineFromConfig('y', { binary: 'y', argv: ['{spec}'], output: 'codex' }, 'test');
    assert.deepEqual(codexLike.stateShared, builtinEngines().get('codex')?.stateShared);
    assert.throws(
      () => customEngineFromConfig('z', { binary: 'z', argv: ['{spec}'], state_shared: 'auth.json' }, 'conf.json'),
      /conf\.json: z\.state_shared must be array/,
    );
  });

  it('the plan: a 0700 tmpfs over each private dir after the writable binds, then the existing shared paths bound back', () => {
    const home = mk();
    const dir = path.join(home, '.eng');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'auth.json'), 'token');
    const { args } = bwrapCommand(
      { binary: 'bwrap', writable: [home], network: true, privateDirs: [dir], sharedPaths: [path.join(dir, 'auth.json'), path.join(dir, 'missing.json')] },
      home,
      'true',
      [],
    );
    const tmpfs = args.findIndex((a, i) => a === '--tmpfs' && args[i + 1] === dir);
    assert.ok(tmpfs > 0, args.join(' '));
    assert.deepEqual(args.slice(tmpfs - 2, tmpfs), ['--perms', '0700']);
    assert.ok(args.indexOf(home) < tmpfs, 'the writable binds come first (a private dir inside one is still private)');
    const bind = args.indexOf(path.join(dir, 'auth.json'));
    assert.ok(bind > tmpfs && args[bind - 1] === '--bind', args.join(' '));
    assert.ok(!args.includes(path.join(dir, 'missing.json')), 'a shared path that does not exist is skipped');
  });

  it("inside bubblewrap: the reader reads the login, not another run's session; its own writes to the dir are dropped, to the login kept", async function () {
    const { binary } = await requireSandbox(this);
    const home = mk();
    const engine = customEngineFromConfig(
      'eng',
      { binary: 'bash', argv: ['-c', '{spec}'], state_dirs: ['~/.eng', '~/.eng-cache'], state_shared: ['~/.eng/auth.json', '~/.eng-cache'] },
      'test',
    );
    const state = engineState(engine, { HOME: home });
    fs.mkdirSync(path.join(home, '.eng', 'sessions'));
    fs.writeFileSync(path.join(home, '.eng', 'sessions', 'other-run.jsonl'), 'I am candidate 2, made by codex');
    fs.writeFileSync(path.join(home, '.eng', 'history.jsonl'), 'candidate 2 prompt');
    fs.writeFileSync(path.join(home, '.eng', 'auth.json'), 'token-1');
    fs.writeFileSync(path.join(home, '.eng-cache', 'models.json'), '[]');
    const view = readerStateView(state);
    const script = [
      'cd ~/.eng',
      'echo "login: $(cat auth.json)"',
      'echo "listing: $(ls -A | tr "\\n" " ")"',
      'echo "mode: $(stat -c %a .)"',
      'cat sessions/other-run.jsonl history.jsonl 2>/dev/null && echo LEAK',
      'grep -rl "candidate 2" ~ 2>/dev/null | sed "s/^/LEAK /"',
      'echo "cache: $(cat ~/.eng-cache/models.json)"',
      'mkdir -p sessions && echo mine > sessions/reader.jsonl && echo written',
      'echo token-2 > auth.json',
    ].join('\n');
    const cmd = bwrapCommand(
      { binary, writable: [...view.writable], network: true, privateDirs: view.privateDirs, sharedPaths: view.sharedPaths },
      home,
      'bash',
      ['-c', script],
      [],
      { HOME: home },
    );
    const r = await execa(cmd.file, cmd.args, { env: { ...process.env, HOME: home }, reject: false, all: true, stdin: 'ignore' });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.all, /^login: token-1$/m);
    assert.match(r.all, /^listing: auth\.json $/m);
    assert.match(r.all, /^mode: 700$/m);
    assert.match(r.all, /^cache: \[\]$/m);
    assert.match(r.all, /^written$/m);
    assert.doesNotMatch(r.all, /LEAK/);
    // On the host: the other run's session is still there, the reader's own is not; its token refresh is.
    assert.ok(fs.existsSync(path.join(home, '.eng', 'sessions', 'other-run.jsonl')));
    assert.ok(!fs.existsSync(path.join(home, '.eng', 'sessions', 'reader.jsonl')));
    assert.equal(fs.readFileSync(path.join(home, '.eng', 'auth.json'), 'utf8'), 'token-2\n');
  });
});

describe("sandbox: a reader does not see the other engines' state dirs", () => {
  it("lists the other engines' existing state dirs, never its own, one that does not exist, nor one holding a kept path", () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-others-'));
    try {
      for (const d of ['.own', '.other', '.wide/inner']) fs.mkdirSync(path.join(home, d), { recursive: true });
      const base = builtinEngines().get('script')!;
      const own = { ...base, name: 'own', stateDirs: ['~/.own'] };
      const engines = [
        own,
        { ...base, name: 'other', stateDirs: ['~/.other', '~/.missing'] },
        { ...base, name: 'wide', stateDirs: ['~/.wide', '~'] },
        { ...base, name: 'same', stateDirs: ['~/.own'] },
      ];
      const env = { HOME: home };
      // ~/.wide holds the kept task dir, ~ is the home, ~/.own is the reader's own: none of them is hidden.
      assert.deepEqual(otherEnginesState(engines, own, env, [path.join(home, '.own'), path.join(home, '.wide', 'inner', 'task')]), [path.join(home, '.other')]);
      // without the kept task dir inside it, ~/.wide is another engine's state too
      assert.deepEqual(otherEnginesState(engines, own, env, [path.join(home, '.own')]).sort(), [path.join(home, '.other'), path.join(home, '.wide')]);
      // nor one that holds the reader's binary, named or where its link leads (a relative name is no path)
      fs.writeFileSync(path.join(home, '.other', 'cli'), '');
      fs.symlinkSync(path.join(home, '.other', 'cli'), path.join(home, 'cli-link'));
      assert.deepEqual(otherEnginesState(engines, own, env, [path.join(home, '.own'), path.join(home, 'cli-link'), 'cli']), [path.join(home, '.wide')]);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
