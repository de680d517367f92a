import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli, type AgentCliName } from '../helpers/agent-clis';
import { engineEnv, ISOLATED, startVerdict, TEST_KEY } from '../helpers/real-engines';
import { tempDir } from '../helpers/fixtures';
import { startModelServer, type ModelServer } from '../fixtures/model-server';

// `verdict doctor --probe` starts each real CLI for real (its login command, then a one-line prompt) in the user's
// environment: with all five real CLIs on PATH, pointed at the scripted model server, every probe must answer and the
// user's home — every file the CLIs keep there, their settings, their login, ~/.claude.json — must be byte-identical
// afterwards, with no session, temporary file or migrated setting left (extension/cli/probe-home.ts).

const ENGINES: AgentCliName[] = ['codex', 'claude', 'gemini', 'opencode', 'grok'];

/** Every path under `root` with what it is: a file's sha256 and mode, a folder, a link's target. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (abs: string, rel: string) => {
    for (const name of fs.readdirSync(abs).sort()) {
      const p = path.join(abs, name);
      const r = `${rel}/${name}`;
      const st = fs.lstatSync(p);
      if (st.isSymbolicLink()) out[r] = `link ${fs.readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[r] = 'dir';
        walk(p, r);
      } else out[r] = `${(st.mode & 0o7777).toString(8)} ${crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex')}`;
    }
  };
  walk(root, '');
  return out;
}

/** The user's own state for each CLI, as it might be on a developer's machine (over what engineEnv wrote). */
function seedUserState(home: string, codexHome: string): void {
  const put = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  };
  // Claude Code replaces this by rename on every start.
  put(path.join(home, '.claude.json'), '{\n  "numStartups": 41,\n  "userID": "user-of-this-machine",\n  "projects": {}\n}\n');
  put(path.join(home, '.claude', 'settings.json'), '{\n  "theme": "dark"\n}\n');
  // engineEnv's settings hold general.disableAutoUpdate and disableUpdateNag, keys Gemini CLI 0.61.0 migrates at start.
  put(path.join(home, '.gemini', 'GEMINI.md'), '# My instructions\n');
  put(path.join(codexHome, 'AGENTS.md'), '# My instructions\n');
  put(path.join(home, '.config', 'opencode', 'opencode.json'), '{\n  "theme": "github"\n}\n');
  // opencode's login (doctor's login check reads it; the provider's key comes from the config in the environment).
  put(path.join(home, '.local', 'share', 'opencode', 'auth.json'), JSON.stringify({ 'verdict-test': { type: 'api', key: TEST_KEY } }) + '\n');
  // The folder opencode keeps the tools it downloads in: shared with the probe as with a run (linked, not copied), and
  // still there after the probe's home is removed.
  put(path.join(home, '.local', 'share', 'opencode', 'bin', 'tool'), '#!/bin/sh\n');
  put(path.join(home, '.grok', 'user-settings.json'), '{\n  "defaultModel": "grok-code-fast-1",\n  "models": ["grok-code-fast-1"]\n}\n');
}

describe(`verdict doctor --probe with the real CLIs leaves the user's home as it was (${ISOLATED ? 'loopback-only network namespace' : 'not isolated'})`, function () {
  this.timeout(600000);
  let server: ModelServer;
  let dir: string;
  let env: Record<string, string>;

  before(async function () {
    this.timeout(600000);
    const binDirs = await Promise.all(ENGINES.map((e) => ensureCli(e)));
    server = await startModelServer({});
    dir = tempDir('verdict-real-doctor-');
    // doctor runs the CLIs unsandboxed, in its own network namespace where the server is 127.0.0.1 (startVerdict).
    const local = (v: string) => v.split(`//10.0.2.2:`).join('//127.0.0.1:');
    env = Object.fromEntries(
      Object.entries(Object.assign({}, ...ENGINES.map((e) => engineEnv(e, dir, server))) as Record<string, string>).map(([k, v]) => [k, local(v)]),
    );
    const config = path.join(env.CODEX_HOME as string, 'config.toml');
    fs.writeFileSync(config, local(fs.readFileSync(config, 'utf8')));
    env.PATH = [...binDirs, process.env.PATH ?? ''].join(path.delimiter);
    seedUserState(env.HOME as string, env.CODEX_HOME as string);
  });

  after(async () => {
    await server?.close();
  });

  const doctor = async (args: string[]) => {
    const r = await (await startVerdict(['doctor', '--json', '--home', path.join(dir, 'verdict-home'), ...args], { cwd: dir, env, server })).done();
    return {
      r,
      report: JSON.parse(String(r.stdout)) as {
        engines: Array<{ name: string; login: string; loginDetail: string; probe: { ok: boolean; detail: string } | null }>;
      },
    };
  };

  it("without a login for codex: `codex login status` runs, and the user's home and $CODEX_HOME are byte-identical", async () => {
    // A codex on OpenAI's own provider (config.toml names no model_provider of its own): its login is for `codex login
    // status` to say. (With the test's provider, whose key variable is set, doctor would not ask it: the next test.)
    const config = path.join(env.CODEX_HOME as string, 'config.toml');
    const withProvider = fs.readFileSync(config, 'utf8');
    fs.writeFileSync(config, withProvider.replace(/^model_provider = .*\n/m, ''));
    try {
      const before = { home: tree(env.HOME as string), codex: tree(env.CODEX_HOME as string) };
      const { r, report } = await doctor([]);
      const codex = report.engines.find((e) => e.name === 'codex');
      assert.equal(codex?.login, 'no', String(r.all));
      assert.match(String(codex?.loginDetail), /^codex login status: /, 'the login command ran');
      assert.deepEqual({ home: tree(env.HOME as string), codex: tree(env.CODEX_HOME as string) }, before);
    } finally {
      fs.writeFileSync(config, withProvider);
    }
  });

  it("--probe: every engine's probe runs, and afterwards every file of the user's home and $CODEX_HOME is byte-identical, nothing added", async () => {
    // A codex login besides (an API key login, as `codex login --with-api-key` writes it): it too must stay as it was.
    fs.writeFileSync(path.join(env.CODEX_HOME as string, 'auth.json'), JSON.stringify({ OPENAI_API_KEY: TEST_KEY }) + '\n', { mode: 0o600 });
    const before = { home: tree(env.HOME as string), codex: tree(env.CODEX_HOME as string) };
    const { r, report } = await doctor(['--probe']);
    // codex's provider (the scripted server) reads its key from the variable its env_key names, which is set.
    assert.match(
      String(report.engines.find((e) => e.name === 'codex')?.loginDetail),
      /^\$VERDICT_TEST_MODEL_KEY is set: codex's model provider "verdict-test"/,
    );
    // Each probe was started (its CLI ran against the server); on a machine this loaded one may pass doctor's 90 s
    // limit (opencode took 115 s here at a load of 21 on 2 cores) and is then stopped, having started all the same.
    const probes = ENGINES.map((n) => [n, report.engines.find((e) => e.name === n)?.probe?.detail ?? null]);
    for (const [name, detail] of probes) assert.match(String(detail), /^answered|^no answer within 90 s$/, `${name}'s probe ran\n${String(r.all)}`);
    const apis = new Set(server.requests.map((q) => q.api));
    for (const api of ['responses', 'messages', 'gemini', 'chat'] as const) assert.ok(apis.has(api), `the server was asked in its ${api} dialect`);
    assert.deepEqual({ home: tree(env.HOME as string), codex: tree(env.CODEX_HOME as string) }, before);
  });
});
