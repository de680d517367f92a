import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultConfigPath, loadConfig, loadUserConfig, locateConfig } from '../../extension/core/config/config';
import { containmentChoice, overlaySettings, settingsFromConfig } from '../../extension/core/config/settings';
import { fullAccessProblems } from '../../extension/core/run/full-access';
import { tempDir } from '../helpers/fixtures';
import { parseManifest } from '../../extension/core/run/manifest';

/** The config file in force: --config > $VERDICT_CONFIG > the default file (XDG_CONFIG_HOME or ~/.config) when it exists. */
describe('config: location and precedence', () => {
  let dir: string;
  let xdg: string;
  const write = (file: string, value: unknown) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
    return file;
  };
  beforeEach(() => {
    dir = tempDir();
    xdg = path.join(dir, 'xdg');
  });

  it('default path: $XDG_CONFIG_HOME/verdict/config.json, else ~/.config/verdict/config.json', () => {
    assert.equal(defaultConfigPath({ XDG_CONFIG_HOME: xdg }), path.join(xdg, 'verdict', 'config.json'));
    assert.equal(defaultConfigPath({}), path.join(os.homedir(), '.config', 'verdict', 'config.json'));
    // A relative XDG_CONFIG_HOME is invalid per the XDG spec and ignored.
    assert.equal(defaultConfigPath({ XDG_CONFIG_HOME: 'rel' }), path.join(os.homedir(), '.config', 'verdict', 'config.json'));
  });

  it('no flag, no variable, no default file: empty config, shown as the default path it would be read from', () => {
    const env = { XDG_CONFIG_HOME: xdg };
    assert.deepEqual(locateConfig(undefined, env), { file: null, shown: path.join(xdg, 'verdict', 'config.json'), via: 'default' });
    assert.deepEqual(loadUserConfig(undefined, env), {
      config: {},
      file: null,
      shown: path.join(xdg, 'verdict', 'config.json'),
      ringer: { file: null, notes: [] },
    });
  });

  it('the default file is read when it exists; $VERDICT_CONFIG beats it; --config beats both', () => {
    const dflt = write(path.join(xdg, 'verdict', 'config.json'), { identity: 'default' });
    const fromEnv = write(path.join(dir, 'env.json'), { identity: 'env' });
    const fromFlag = write(path.join(dir, 'flag.json'), { identity: 'flag' });
    assert.equal(loadUserConfig(undefined, { XDG_CONFIG_HOME: xdg }).config.identity, 'default');
    assert.equal(loadUserConfig(undefined, { XDG_CONFIG_HOME: xdg, VERDICT_CONFIG: fromEnv }).config.identity, 'env');
    const both = loadUserConfig(fromFlag, { XDG_CONFIG_HOME: xdg, VERDICT_CONFIG: fromEnv });
    assert.equal(both.config.identity, 'flag');
    assert.equal(both.file, fromFlag);
    assert.equal(both.shown, fromFlag);
    assert.equal(locateConfig(fromFlag, { VERDICT_CONFIG: fromEnv }).via, '--config');
    assert.equal(locateConfig(undefined, { VERDICT_CONFIG: fromEnv }).via, '$VERDICT_CONFIG');
    assert.equal(loadUserConfig(undefined, { XDG_CONFIG_HOME: xdg }).file, dflt);
  });

  it('a file named by --config or $VERDICT_CONFIG must exist; the error names it', () => {
    const missing = path.join(dir, 'missing.json');
    assert.throws(() => loadUserConfig(missing, {}), new RegExp(`^Error: ${missing}: cannot read the config file`));
    assert.throws(
      () => loadUserConfig(undefined, { VERDICT_CONFIG: missing }),
      new RegExp(`^Error: ${missing}: the config file named by \\$VERDICT_CONFIG does not exist`),
    );
  });

  it('sandbox and allow_full_access: booleans, a wrong type names file:line:column and field', () => {
    const bad = write(path.join(dir, 'bad.json'), { sandbox: 'no' });
    assert.throws(() => loadConfig(bad), new RegExp(`${bad}:1:12: sandbox: must be true or false, got "no"`));
    const bad2 = write(path.join(dir, 'bad2.json'), { allow_full_access: 1 });
    assert.throws(() => loadConfig(bad2), new RegExp(`${bad2}:1:22: allow_full_access: must be true or false, got 1`));
    const bad3 = write(path.join(dir, 'bad3.json'), { pool: 'mysql://db' });
    assert.throws(() => loadConfig(bad3), new RegExp(`${bad3}:1:9: pool: must be a postgres:// or postgresql:// URL`));
    // pool as {url, trust}: trust is "check" or "worker", nothing else; an unknown field is refused.
    const trust = write(path.join(dir, 'trust.json'), { pool: { url: 'postgres://db/pool', trust: 'workers' } });
    assert.throws(() => loadConfig(trust), new RegExp(`${trust}:1:45: pool.trust: must be "check" .* or "worker" .*, got "workers"`));
    const extra = write(path.join(dir, 'extra.json'), { pool: { trust: 'worker', recheck: false } });
    assert.throws(() => loadConfig(extra), /pool: unknown field\(s\) recheck/);
    const url = write(path.join(dir, 'url.json'), { pool: { url: 'mysql://db' } });
    assert.throws(() => loadConfig(url), new RegExp(`${url}:1:16: pool.url: must be a postgres:// or postgresql:// URL`));
    const good = write(path.join(dir, 'good.jsonc'), '{ // comments are fine\n "sandbox": false, "allow_full_access": true, }');
    assert.deepEqual(loadConfig(good).config, { sandbox: false, allow_full_access: true });
  });

  it('sockets: absolute or ~/ paths; anything else names file:line:column and the entry', () => {
    const good = write(path.join(dir, 'good.json'), { sockets: ['/run/user/1000/podman/podman.sock', '~/.ssh/agent.sock'] });
    assert.deepEqual(loadConfig(good).config.sockets, ['/run/user/1000/podman/podman.sock', '~/.ssh/agent.sock']);
    const relative = write(path.join(dir, 'relative.jsonc'), '{\n  // the agent\n  "sockets": [\n    "/ok.sock",\n    "agent.sock"\n  ]\n}');
    assert.throws(() => loadConfig(relative), new RegExp(`^Error: ${relative}:5:5: sockets\\[1\\]: "agent.sock" must be an absolute path or start with ~/$`));
    const tilde = write(path.join(dir, 'tilde.json'), '{"sockets": ["~user/x"]}');
    assert.throws(() => loadConfig(tilde), new RegExp(`^Error: ${tilde}:1:14: sockets\\[0\\]: "~user/x" must be an absolute path`));
    const notList = write(path.join(dir, 'notlist.json'), '{"sockets": "/x.sock"}');
    assert.throws(() => loadConfig(notList), new RegExp(`^Error: ${notList}:1:13: sockets: must be an array of paths`));
    const notString = write(path.join(dir, 'notstring.json'), '{"sockets": [3]}');
    assert.throws(() => loadConfig(notString), new RegExp(`^Error: ${notString}:1:14: sockets\\[0\\]: 3 must be an absolute path`));
  });

  it('quota.max_wait_h: hours from 0 to 192 (fractions allowed); anything else names file:line:column and field', () => {
    for (const h of [0, 0.25, 6, 192])
      assert.deepEqual(loadConfig(write(path.join(dir, `ok-${h}.json`), { quota: { max_wait_h: h } })).config.quota, { max_wait_h: h });
    for (const [name, quota, message] of [
      ['negative', { max_wait_h: -1 }, '1:24: quota.max_wait_h: must be a number of hours from 0 to 192, got -1'],
      ['past 8 days', { max_wait_h: 200 }, '1:24: quota.max_wait_h: must be a number of hours from 0 to 192, got 200'],
      ['a string', { max_wait_h: '6' }, '1:24: quota.max_wait_h: must be a number of hours from 0 to 192, got "6"'],
      ['unknown key', { max_wait: 6 }, '1:22: quota.max_wait: is not a known field (known: max_wait_h)'],
      ['not an object', 6, '1:10: quota: must be an object'],
    ] as const) {
      const file = write(path.join(dir, `bad-quota-${name.replace(/ /g, '-')}.json`), { quota });
      assert.throws(
        () => loadConfig(file),
        (e: Error) => e.message.startsWith(`${file}:${message}`),
        name,
      );
    }
    assert.equal(settingsFromConfig({ quota: { max_wait_h: 2 } }, '/c.json').quotaMaxWaitH, 2);
  });

  it('hide and expose: absolute or ~/ paths; anything else names file:line:column and the entry', () => {
    const good = write(path.join(dir, 'good.json'), { hide: ['~/.config/mycloud', '/etc/app/secret.env'], expose: ['~/.npmrc'] });
    assert.deepEqual([loadConfig(good).config.hide, loadConfig(good).config.expose], [['~/.config/mycloud', '/etc/app/secret.env'], ['~/.npmrc']]);
    const hide = write(path.join(dir, 'hide.json'), '{\n  "hide": ["/ok",\n    ".aws"]\n}');
    assert.throws(() => loadConfig(hide), new RegExp(`^Error: ${hide}:3:5: hide\\[1\\]: ".aws" must be an absolute path or start with ~/$`));
    const expose = write(path.join(dir, 'expose.json'), '{"expose": ["$HOME/.npmrc"]}');
    assert.throws(() => loadConfig(expose), new RegExp(`^Error: ${expose}:1:13: expose\\[0\\]: "\\$HOME/.npmrc" must be an absolute path or start with ~/$`));
    assert.deepEqual(
      [settingsFromConfig(loadConfig(good).config, good).hide, containmentChoice(settingsFromConfig(loadConfig(good).config, good)).expose],
      [['~/.config/mycloud', '/etc/app/secret.env'], ['~/.npmrc']],
    );
  });

  it("engines: each entry's problem names file:line:column and the field path, as a manifest's do", () => {
    const text =
      '{\n  "engines": {\n    "mine": { "binary": "x", "argv": ["{spec}"], "max_parallel": 0 },\n    "two": {\n      "binary": "y",\n      "argv": ["-m", "{prompt}"]\n    }\n  }\n}';
    const file = write(path.join(dir, 'engines.jsonc'), text);
    assert.throws(
      () => loadConfig(file),
      (e: Error) => {
        assert.deepEqual(e.message.split('\n'), [
          `${file}:3:66: engines.mine.max_parallel: must be >= 1, got 0`,
          `${file}:6:22: engines.two.argv[1]: unknown placeholder {prompt} (known: {spec} {taskdir} {model} {engine_args} {access})`,
        ]);
        return true;
      },
    );
    for (const [name, entry, message] of [
      ['missing', { mine: { argv: ['{spec}'] } }, '1:20: engines.mine.binary: is required'],
      ['unknown field', { mine: { binary: 'x', argv: ['{spec}'], max_paralel: 2 } }, '1:66: engines.mine.max_paralel: is not a known field'],
      ['wrong type', { mine: { binary: 'x', argv: ['{spec}', 7] } }, '1:51: engines.mine.argv[1]: must be a string or an array of strings, got 7'],
      ['bad name', { 'a b': { binary: 'x', argv: ['{spec}'] } }, '1:19: engines.a b: engine name "a b" may only contain'],
    ] as const) {
      const f = write(path.join(dir, `engine-${name.replace(/ /g, '-')}.json`), { engines: entry });
      assert.throws(
        () => loadConfig(f),
        (e: Error) => e.message.startsWith(`${f}:${message}`) || assert.fail(`${name}: ${e.message}`),
        name,
      );
    }
    // A good entry loads; the engine is built from it as before.
    const good = write(path.join(dir, 'engine-good.json'), { engines: { mine: { binary: 'x', argv: ['{spec}'], max_parallel: 2 } } });
    assert.deepEqual(Object.keys(loadConfig(good).config.engines ?? {}), ['mine']);
  });
});

/** One settings type; the precedence of flag, config and setting written once (containmentChoice). */
describe('settings: one type, containment precedence', () => {
  it('from the config file: snake_case → camelCase, defaults sandbox on, full access off', () => {
    assert.deepEqual(settingsFromConfig({}, '/c.json'), {
      identity: undefined,
      engines: {},
      maxParallel: undefined,
      memoryMb: undefined,
      logMaxMb: undefined,
      allowFullAccess: false,
      sandbox: true,
      sockets: [],
      hide: [],
      expose: [],
      postgresUrl: undefined,
      poolUrl: undefined,
      poolTrust: 'check',
      quotaMaxWaitH: undefined,
      configFile: '/c.json',
    });
    assert.deepEqual(settingsFromConfig({ sockets: ['~/a.sock'] }, '/c.json').sockets, ['~/a.sock']);
    assert.deepEqual(containmentChoice(settingsFromConfig({ sockets: ['/run/x.sock'] }, '/c.json')).sockets, ['/run/x.sock']);
    const s = settingsFromConfig(
      { identity: 'me', max_parallel: 3, allow_full_access: true, sandbox: false, postgres_url: 'postgres://x', pool: 'postgres://pool' },
      '/c.json',
    );
    assert.deepEqual(
      [s.identity, s.maxParallel, s.allowFullAccess, s.sandbox, s.postgresUrl, s.poolUrl, s.poolTrust],
      ['me', 3, true, false, 'postgres://x', 'postgres://pool', 'check'],
    );
    // The pool as an object: its URL and its trust (docs/scale.md "Trust").
    const t = settingsFromConfig({ pool: { url: 'postgres://pool', trust: 'worker' } }, '/c.json');
    assert.deepEqual([t.poolUrl, t.poolTrust], ['postgres://pool', 'worker']);
    assert.deepEqual(
      [settingsFromConfig({ pool: { trust: 'worker' } }, '/c.json').poolUrl, settingsFromConfig({ pool: { url: 'postgres://p' } }, '/c.json').poolTrust],
      [undefined, 'check'],
    );
  });

  it('editor settings the user set win over the config file; unset ones leave it', () => {
    const base = settingsFromConfig({ sandbox: false, allow_full_access: true, identity: 'file' }, '/c.json');
    const s = overlaySettings(base, { sandbox: true, allowFullAccess: undefined, identity: undefined });
    assert.equal(s.sandbox, true);
    assert.equal(s.allowFullAccess, true);
    assert.equal(s.identity, 'file');
    assert.equal(s.configFile, '/c.json');
  });

  it('--no-sandbox > settings > auto; only settings allow full access', () => {
    const on = settingsFromConfig({}, '/c.json');
    const off = settingsFromConfig({ sandbox: false }, '/c.json');
    assert.deepEqual(containmentChoice(on), { sandbox: 'auto', allowFullAccess: false, configSource: '/c.json', sockets: [], hide: [], expose: [] });
    assert.deepEqual(containmentChoice(on, { noSandbox: true }), {
      sandbox: 'off',
      allowFullAccess: false,
      configSource: '/c.json',
      sockets: [],
      hide: [],
      expose: [],
    });
    assert.deepEqual(containmentChoice(off), { sandbox: 'off', allowFullAccess: false, configSource: '/c.json', sockets: [], hide: [], expose: [] });
    assert.deepEqual(
      containmentChoice(off, { noSandbox: false }),
      { sandbox: 'off', allowFullAccess: false, configSource: '/c.json', sockets: [], hide: [], expose: [] },
      'no flag turns the sandbox back on',
    );
    assert.deepEqual(containmentChoice(settingsFromConfig({ allow_full_access: true }, '/c.json')), {
      sandbox: 'auto',
      allowFullAccess: true,
      configSource: '/c.json',
      sockets: [],
      hide: [],
      expose: [],
    });
  });
});

describe('full_access refusal (fullAccessProblems)', () => {
  const manifest = (tasks: object[]) => {
    const { manifest: m, problems } = parseManifest(JSON.stringify({ tasks }), '/w/t.swarm.json', { engines: new Set(['script']) });
    assert.ok(m, JSON.stringify(problems));
    return m;
  };
  const t = (key: string, extra: object = {}) => ({ key, spec: 'x', check: 'true', engine: 'script', ...extra });

  it('one line per task with full_access when not allowed, naming the config file and the setting', () => {
    const m = manifest([t('a', { full_access: true }), t('b'), t('c', { full_access: true }), t('d', { full_access: false })]);
    assert.deepEqual(fullAccessProblems(m, false, '/home/u/.config/verdict/config.json'), [
      'task "a" sets full_access: true (run its engine without any sandbox); refused: set "allow_full_access": true in /home/u/.config/verdict/config.json or the VS Code setting verdict.allowFullAccess',
      'task "c" sets full_access: true (run its engine without any sandbox); refused: set "allow_full_access": true in /home/u/.config/verdict/config.json or the VS Code setting verdict.allowFullAccess',
    ]);
  });

  it('nothing when allowed, or when no task asks for it', () => {
    assert.deepEqual(fullAccessProblems(manifest([t('a', { full_access: true })]), true, '/c.json'), []);
    assert.deepEqual(fullAccessProblems(manifest([t('a'), t('b')]), false, '/c.json'), []);
  });
});
