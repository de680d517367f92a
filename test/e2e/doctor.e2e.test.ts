import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import { CLI } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { uncoveredDir } from '../helpers/uncovered';

/** Runs the built CLI with exactly `env` (no inherited PATH), node by its absolute path. */
const run = (args: string[], env: Record<string, string>) =>
  execa(process.execPath, [CLI, ...args], { env, extendEnv: false, reject: false, all: true, stdin: 'ignore' });

/** `verdict doctor` and the config plumbing, through the built CLI (npm run build first). */
describe('verdict doctor and the config file (CLI)', function () {
  this.timeout(60000);
  let dir: string;
  let env: Record<string, string>;
  beforeEach(() => {
    dir = tempDir();
    env = { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'xdg'), VERDICT_HOME: path.join(dir, 'home') };
  });

  it('bubblewrap here: the bwrap line; exit 0', async function () {
    if (process.platform !== 'linux') this.skip();
    const r = await run(['doctor'], env);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stdout, /^sandbox: bwrap \S+ \(\S+\): every step runs in its own PID namespace/m);
    assert.match(r.stdout, /^a run can start here with the defaults$/m);
    const uid = process.getuid?.() as number;
    assert.match(r.stdout, new RegExp(`^user: \\S+ \\(uid ${uid}\\) — ${uid === 0 ? 'root: ' : 'not root: '}`, 'm'), 'who runs Verdict, root or not');
  });

  it('host sockets: the covered folders, a socket bound outside them covered where it lies, a declared one reachable', async function () {
    if (process.platform !== 'linux') this.skip();
    const outside = uncoveredDir('doctor-sockets-');
    const sock = path.join(outside, 'svc.sock');
    const server = net.createServer((c) => c.end());
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      const cfg = path.join(dir, 'xdg', 'verdict', 'config.json');
      fs.mkdirSync(path.dirname(cfg), { recursive: true });
      fs.writeFileSync(cfg, JSON.stringify({ sockets: ['~/agent.sock'] }));
      const r = await run(['doctor'], env);
      assert.equal(r.exitCode, 0, r.all);
      const line = r.stdout.split('\n').find((l) => l.startsWith('host sockets: ')) ?? '';
      assert.match(line, /^host sockets: none reachable from a step — \/tmp, \/var\/tmp, \/run.* are empty in every sandbox/, r.stdout);
      assert.ok(line.includes(sock), line);
      assert.ok(line.includes(`reachable, as the config's "sockets" declares: ${path.join(dir, 'agent.sock')}`), line);
      const report = JSON.parse((await run(['doctor', '--json'], env)).stdout);
      assert.ok(report.sockets.covered.includes(sock), JSON.stringify(report.sockets));
      assert.ok(report.sockets.bound >= 1);
      assert.deepEqual(report.sockets.declared, [path.join(dir, 'agent.sock')]);
    } finally {
      server.close();
    }
  });

  it('VERDICT_BWRAP naming a missing file: the reason, exit 1; --json says the same', async () => {
    const missing = path.join(dir, 'no-bwrap');
    const r = await run(['doctor'], { ...env, VERDICT_BWRAP: missing });
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stdout, /^sandbox: none — .+; runs refuse to start unless --no-sandbox$/m);
    assert.match(r.stdout, /^a run cannot start here with the defaults:$/m);
    const j = await run(['doctor', '--json'], { ...env, VERDICT_BWRAP: missing });
    assert.equal(j.exitCode, 1);
    const report = JSON.parse(j.stdout);
    assert.equal(report.ok, false);
    assert.equal(report.sandbox.kind, 'none');
    assert.ok(report.sandbox.reason.length > 0);
    assert.match(report.problems[0], /^sandbox: /);
  });

  it('a PATH without bwrap: "not installed" with how to install it, exit 1; "sandbox": false in the config makes it 0', async function () {
    if (process.platform !== 'linux') this.skip();
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    for (const tool of ['git', 'bash']) {
      const found = (process.env.PATH ?? '')
        .split(':')
        .map((d) => path.join(d, tool))
        .find((f) => fs.existsSync(f));
      if (found) fs.symlinkSync(found, path.join(bin, tool));
    }
    const noBwrap = { ...env, PATH: bin };
    const r = await run(['doctor'], noBwrap);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stdout, /^sandbox: none — bubblewrap \(bwrap\) is not installed: apt-get install bubblewrap.*; runs refuse to start unless --no-sandbox$/m);
    assert.match(r.stdout, new RegExp(`^ {2}sandbox: .*set "sandbox": false in ${path.join(dir, 'xdg', 'verdict', 'config.json')}`, 'm'));

    fs.mkdirSync(path.join(dir, 'xdg', 'verdict'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'xdg', 'verdict', 'config.json'), '{ "sandbox": false }');
    const off = await run(['doctor'], noBwrap);
    assert.equal(off.exitCode, 0, off.all);
    assert.match(off.stdout, /^sandbox: off .*every step runs unsandboxed; none here either: bubblewrap \(bwrap\) is not installed/m);
    assert.match(off.stdout, /^config: \S+config\.json \(the default file\): sandbox off, allow_full_access false$/m);
  });

  it('the config file in force: --config > VERDICT_CONFIG > the default file', async () => {
    const write = (name: string, identity: string) => {
      const f = path.join(dir, name);
      fs.mkdirSync(path.dirname(f), { recursive: true });
      fs.writeFileSync(f, JSON.stringify({ identity }));
      return f;
    };
    const dflt = write('xdg/verdict/config.json', 'd');
    const fromEnv = write('env.json', 'e');
    const fromFlag = write('flag.json', 'f');
    const shown = async (args: string[], e: Record<string, string>) => JSON.parse((await run(['doctor', '--json', ...args], e)).stdout).config;
    assert.deepEqual([(await shown([], env)).file, (await shown([], env)).via], [dflt, 'default']);
    assert.deepEqual(
      [(await shown([], { ...env, VERDICT_CONFIG: fromEnv })).file, (await shown([], { ...env, VERDICT_CONFIG: fromEnv })).via],
      [fromEnv, '$VERDICT_CONFIG'],
    );
    const f = await shown(['--config', fromFlag], { ...env, VERDICT_CONFIG: fromEnv });
    assert.deepEqual([f.file, f.via], [fromFlag, '--config']);
  });

  it('verdict run: a bad "sandbox" in the default config file is exit 2 naming file and field; VERDICT_CONFIG naming a missing file too', async () => {
    const manifest = writeManifest(dir, { tasks: [scriptTask('a', 'echo hi > a.txt', 'test -s a.txt')] });
    const cfg = path.join(dir, 'xdg', 'verdict', 'config.json');
    fs.mkdirSync(path.dirname(cfg), { recursive: true });
    fs.writeFileSync(cfg, '{ "sandbox": "no" }');
    const r = await run(['run', manifest, '--no-dashboard'], env);
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.stderr, new RegExp(`verdict: ${cfg}:1:14: sandbox: must be true or false, got "no"`));
    const missing = path.join(dir, 'missing.json');
    const m = await run(['run', manifest, '--no-dashboard'], { ...env, VERDICT_CONFIG: missing });
    assert.equal(m.exitCode, 2, m.all);
    assert.match(m.stderr, new RegExp(`verdict: ${missing}: the config file named by \\$VERDICT_CONFIG does not exist`));
    assert.equal(fs.existsSync(path.join(dir, 'home', 'runs')), false);
  });

  it('--no-sandbox is a flag of run, pool, resume, rerun and demo (and listed in their help)', async () => {
    for (const command of ['run', 'resume', 'rerun', 'demo']) {
      const help = await run([command, '--help'], env);
      assert.match(help.stdout, /^ {2}--no-sandbox {7}run every step without bubblewrap/m, command);
    }
    assert.match(
      (await run(['doctor', '--no-sandbox'], env)).stderr,
      /^verdict doctor: unknown option --no-sandbox \(doctor takes: .*; --no-sandbox is an option of run, pool, resume, rerun, demo\)/,
    );
    assert.match((await run(['--help'], env)).stdout, /^ {2}doctor \[MANIFEST\] +what this machine offers a run/m);
    const manifest = writeManifest(dir, { tasks: [scriptTask('a', 'echo hi > a.txt', 'test -s a.txt')] });
    const r = await run(['run', manifest, '--no-sandbox', '--no-dashboard'], env);
    assert.equal(r.exitCode, 0, r.all);
  });
  it('full_access: refused naming the config file in force (or the default path), until "allow_full_access": true', async () => {
    const manifest = writeManifest(dir, {
      tasks: [scriptTask('fa', 'echo hi > a.txt', 'test -s a.txt', { full_access: true }), scriptTask('plain', 'echo hi > b.txt', 'test -s b.txt')],
    });
    const dflt = path.join(dir, 'xdg', 'verdict', 'config.json');
    const refused = await run(['run', manifest, '--no-dashboard'], env);
    assert.equal(refused.exitCode, 2, refused.all);
    assert.match(
      refused.stderr,
      new RegExp(
        `task "fa" sets full_access: true \\(run its engine without any sandbox\\); refused: set "allow_full_access": true in ${dflt} or the VS Code setting verdict\\.allowFullAccess`,
      ),
    );
    assert.doesNotMatch(refused.stderr, /task "plain"/);
    const named = path.join(dir, 'named.json');
    fs.writeFileSync(named, '{}');
    const viaFlag = await run(['run', manifest, '--no-dashboard', '--config', named], env);
    assert.equal(viaFlag.exitCode, 2, viaFlag.all);
    assert.match(viaFlag.stderr, new RegExp(`refused: set "allow_full_access": true in ${named} or`));
    fs.writeFileSync(named, '{ "allow_full_access": true }');
    const allowed = await run(['run', manifest, '--no-dashboard', '--config', named], env);
    assert.equal(allowed.exitCode, 0, allowed.all);
  });
});

/** `verdict doctor` per engine: installed (version), logged in, answering (--probe); Postgres; each problem with its fix. */
describe('verdict doctor: engines and Postgres (CLI)', function () {
  // A doctor starts a sandbox probe and each engine's --version; a test runs up to two: at load ~20 over 60 s.
  this.timeout(150000);
  let dir: string;
  let bin: string;
  let env: Record<string, string>;
  /** A fake CLI on PATH: a shell script. */
  const fake = (name: string, body: string) => {
    const file = path.join(bin, name);
    fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    return file;
  };
  beforeEach(() => {
    dir = tempDir();
    bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // No credential variables from this machine: exactly PATH, HOME and the XDG folders.
    env = {
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      HOME: dir,
      XDG_CONFIG_HOME: path.join(dir, 'xdg'),
      XDG_DATA_HOME: path.join(dir, 'data'),
      VERDICT_HOME: path.join(dir, 'home'),
    };
  });

  it('an engine installed but not logged in: its version, NOT logged in, and the command that fixes it', async () => {
    const codex = fake(
      'codex',
      'case "$1" in --version) echo "codex-cli 9.9.9-fake";; login) echo "Not logged in" >&2; exit 1;; *) echo "unexpected: $*" >&2; exit 3;; esac',
    );
    const r = await run(['doctor'], env);
    // 9.9.9 is no version Verdict was tested with (engines/tested-versions.ts), and not of a tested major.
    assert.match(
      r.stdout,
      new RegExp(
        `^ {2}codex +${codex} \\(codex-cli 9\\.9\\.9-fake\\), UNTESTED major version \\(tested: 0\\.171\\.0\\): flags, events or usage fields may have changed, NOT logged in — codex login`,
        'm',
      ),
      r.all,
    );
    assert.match(r.stdout, /^to fix:$/m);
    assert.match(r.stdout, /^ {2}codex: not logged in \(codex login status: Not logged in\) — codex login/m);
    // Not installed: the install command.
    assert.match(r.stdout, /^ {2}gemini: gemini is not installed — npm i -g @google\/gemini-cli/m);
    const j = JSON.parse((await run(['doctor', '--json'], env)).stdout);
    // An engine's trouble stops only its own tasks: a fix to list, not a reason to say a run cannot start.
    assert.deepEqual(
      j.problems.filter((p: string) => /codex|gemini/.test(p)),
      [],
    );
    const c = j.engines.find((e: { name: string }) => e.name === 'codex');
    assert.deepEqual([c.found, c.version, c.login, c.fix], [codex, 'codex-cli 9.9.9-fake', 'no', 'codex login   (or set OPENAI_API_KEY)']);
    assert.equal(j.engines.find((e: { name: string }) => e.name === 'script').login, 'n/a');
    // The same CLI with a key in the environment: logged in, and nothing to fix for it.
    const k = JSON.parse((await run(['doctor', '--json'], { ...env, OPENAI_API_KEY: 'sk-test' })).stdout);
    assert.deepEqual(
      [k.engines.find((e: { name: string }) => e.name === 'codex').login, k.engines.find((e: { name: string }) => e.name === 'codex').loginDetail],
      ['yes', '$OPENAI_API_KEY is set'],
    );
    assert.ok(!k.fixes.some((f: string) => f.startsWith('codex:')), k.fixes.join('\n'));
  });

  it("codex with a model provider of its own (config.toml's env_key): logged in by that variable, and the fix names it, not `codex login`", async () => {
    fake('codex', 'case "$1" in --version) echo "codex-cli 0.171.0";; login) echo "Not logged in" >&2; exit 1;; *) exit 3;; esac');
    const codexHome = path.join(dir, 'codex-home');
    fs.mkdirSync(codexHome);
    const config = path.join(codexHome, 'config.toml');
    fs.writeFileSync(config, 'model_provider = "local"\n[model_providers.local]\nbase_url = "http://127.0.0.1:9/v1"\nenv_key = "LOCAL_MODEL_KEY"\n');
    const codex = async (extra: NodeJS.ProcessEnv) =>
      JSON.parse((await run(['doctor', '--json'], { ...env, CODEX_HOME: codexHome, ...extra })).stdout).engines.find(
        (e: { name: string }) => e.name === 'codex',
      );
    // OPENAI_API_KEY is not that provider's key: still not logged in.
    const missing = await codex({ OPENAI_API_KEY: 'sk-test' });
    assert.deepEqual(
      [missing.login, missing.loginDetail, missing.fix],
      ['no', `$LOCAL_MODEL_KEY is not set: codex's model provider "local" reads it (model_providers.local.env_key in ${config})`, 'export LOCAL_MODEL_KEY=…'],
    );
    const set = await codex({ LOCAL_MODEL_KEY: 'k' });
    assert.deepEqual([set.login, set.fix], ['yes', null]);
    // A provider without env_key, or a file that is not TOML: the usual check (codex login status).
    fs.writeFileSync(config, 'model_provider = "local"\n[model_providers.local]\nbase_url = "http://127.0.0.1:9/v1"\n');
    assert.deepEqual((await codex({})).fix, 'codex login   (or set OPENAI_API_KEY)');
    fs.writeFileSync(config, 'model_provider = [unclosed\n');
    assert.deepEqual((await codex({})).fix, 'codex login   (or set OPENAI_API_KEY)');
  });

  it('a credentials file counts as logged in; an empty one does not', async () => {
    fake('opencode', 'echo 1.0.0-fake');
    const auth = path.join(dir, 'data', 'opencode', 'auth.json');
    fs.mkdirSync(path.dirname(auth), { recursive: true });
    fs.writeFileSync(auth, '{}');
    const opencode = async () => JSON.parse((await run(['doctor', '--json'], env)).stdout).engines.find((e: { name: string }) => e.name === 'opencode');
    assert.equal((await opencode()).login, 'no');
    fs.writeFileSync(auth, '{ "openrouter": { "type": "api", "key": "k" } }');
    assert.deepEqual([(await opencode()).login, (await opencode()).loginDetail], ['yes', auth]);
  });

  it("--probe: a one-line prompt through the engine's own command; an engine that answers and one that does not", async () => {
    fake('answers', 'echo OK');
    fake('broken', 'echo "Error: 401 Unauthorized: invalid api key" >&2; exit 1');
    const cfg = path.join(dir, 'xdg', 'verdict', 'config.json');
    fs.mkdirSync(path.dirname(cfg), { recursive: true });
    fs.writeFileSync(cfg, JSON.stringify({ engines: { answers: { binary: 'answers', argv: ['{spec}'] }, broken: { binary: 'broken', argv: ['{spec}'] } } }));
    const plain = JSON.parse((await run(['doctor', '--json'], env)).stdout);
    assert.equal(plain.engines.find((e: { name: string }) => e.name === 'answers').probe, null, 'no model call without --probe');
    const r = await run(['doctor', '--probe'], env);
    assert.match(r.stdout, /^ {2}answers .*login unknown, answers: answered$/m, r.all);
    assert.match(r.stdout, /^ {2}broken .*does NOT answer: auth \(exit 1\): Error: 401 Unauthorized: invalid api key$/m);
    assert.match(r.stdout, /^ {2}broken: installed, but did not answer: auth/m);
  });

  it("--probe runs the CLI in a throwaway home: the user's settings and ~/.claude.json are untouched, no session is left, a refreshed login is kept", async () => {
    // A claude that does at start what Claude Code does (replaces ~/.claude.json), saves a session, rewrites its
    // settings, and refreshes its login (the old token may then no longer be valid, so the new one must reach the user).
    fake(
      'claude',
      [
        'case "$1" in --version) echo "2.1.332 (Claude Code)"; exit 0;; esac',
        'c="${CLAUDE_CONFIG_DIR:-$HOME/.claude}"',
        'echo \'{"numStartups": 42}\' > "$HOME/.claude.json.tmp" && mv "$HOME/.claude.json.tmp" "$HOME/.claude.json"',
        'mkdir -p "$c/projects/p" && echo "{}" > "$c/projects/p/session.jsonl"',
        'echo \'{"hooks": {"Stop": "planted"}}\' > "$c/settings.json"',
        'echo \'{"claudeAiOauth": {"accessToken": "refreshed"}}\' > "$c/.credentials.json"',
        'echo OK',
      ].join('\n'),
    );
    const put = (rel: string, text: string, mode = 0o644) => {
      fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, rel), text, { mode });
    };
    put('.claude.json', '{"numStartups": 41}\n');
    put('.claude/settings.json', '{"theme": "dark"}\n');
    put('.claude/.credentials.json', '{"claudeAiOauth": {"accessToken": "old"}}\n', 0o600);
    const r = await run(['doctor', '--probe', '--json'], env);
    const claude = JSON.parse(r.stdout).engines.find((e: { name: string }) => e.name === 'claude');
    assert.deepEqual([claude.login, claude.probe?.ok], ['yes', true], r.all);
    assert.equal(fs.readFileSync(path.join(dir, '.claude.json'), 'utf8'), '{"numStartups": 41}\n');
    assert.equal(fs.readFileSync(path.join(dir, '.claude', 'settings.json'), 'utf8'), '{"theme": "dark"}\n');
    assert.deepEqual(fs.readdirSync(path.join(dir, '.claude')).sort(), ['.credentials.json', 'settings.json'], 'no session, no temporary file');
    assert.equal(fs.readFileSync(path.join(dir, '.claude', '.credentials.json'), 'utf8'), '{"claudeAiOauth": {"accessToken": "refreshed"}}\n');
    assert.equal(fs.statSync(path.join(dir, '.claude', '.credentials.json')).mode & 0o777, 0o600, 'the login keeps its mode');
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.startsWith('.claude')),
      ['.claude', '.claude.json'],
    );
  });

  it('Postgres configured but not reachable: said, with the password hidden; a run can still start', async function () {
    const r = await run(['doctor'], { ...env, VERDICT_PG_URL: 'postgres://verdict:s3cret@127.0.0.1:9/verdict' });
    assert.match(r.stdout, /^postgres: postgres:\/\/verdict:\*\*\*@127\.0\.0\.1:9\/verdict NOT reachable \(.+\)$/m, r.all);
    assert.match(r.stdout, /^ {2}postgres: .* is not reachable .* rows wait in runs\.jsonl/m);
    assert.doesNotMatch(r.all ?? '', /s3cret/);
    const j = JSON.parse((await run(['doctor', '--json'], { ...env, VERDICT_PG_URL: 'postgres://verdict:s3cret@127.0.0.1:9/verdict' })).stdout);
    assert.equal(j.postgres.reachable, false);
    assert.deepEqual(
      j.problems.filter((p: string) => /postgres/.test(p)),
      [],
      'an outage never fails a run: not a problem, a fix',
    );
  });
});
