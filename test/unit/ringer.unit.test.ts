import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { expandArgv } from '../../engines/argv';
import { loadUserConfig } from '../../extension/core/config/config';
import { loadRingerConfig, ringerConfigPath } from '../../extension/core/config/ringer-config';
import { settingsFromConfig } from '../../extension/core/config/settings';
import { resolveIdentity } from '../../extension/core/host/identity';
import { looksLikeRingerManifest } from '../../extension/core/manifest/sniff';
import { tempDir } from '../helpers/fixtures';
import { ctx } from './lint-helpers';
import { lintManifestFile, loadManifest } from '../../extension/core/run/manifest';

const RINGER = path.resolve('test/fixtures/ringer');

/** What Ringer's users bring: manifests with empty strings, and ~/.config/ringer/config.toml. */
describe('Ringer compatibility', () => {
  it('a Ringer manifest with "model": "" and "task_type": "" loads; both read as unset (null), as Ringer strips them', () => {
    const { manifest } = loadManifest(path.join(RINGER, 'manifest.json'));
    const [fix, docs] = manifest.tasks;
    assert.equal(fix?.model, null);
    assert.equal(fix?.taskType, null);
    assert.equal(docs?.model, null, 'blanks only: unset too');
    assert.equal(docs?.taskType, 'docs');
  });

  it('lints with no error; the empty task_type gets the same hint as a missing one', async () => {
    const found = await lintManifestFile(path.join(RINGER, 'manifest.json'), { ...ctx, useGit: false });
    assert.deepEqual(
      found.filter((f) => f.severity === 'error').map((f) => `${f.rule}: ${f.message}`),
      [],
    );
    assert.deepEqual(
      found.filter((f) => f.rule === 'missing-task-type').map((f) => f.taskKey),
      ['fix-parser'],
    );
  });

  it("a manifest.json is a Ringer manifest by its shape only: a browser extension's or a web app's is not", () => {
    assert.equal(looksLikeRingerManifest(fs.readFileSync(path.join(RINGER, 'manifest.json'), 'utf8')), true);
    assert.equal(looksLikeRingerManifest('{ "manifest_version": 3, "name": "x", "tasks": [{ "spec": "s", "check": "c" }] }'), false);
    assert.equal(looksLikeRingerManifest('{ "name": "My PWA", "icons": [], "start_url": "/" }'), false);
    assert.equal(looksLikeRingerManifest('{ "tasks": [] }'), false);
    assert.equal(looksLikeRingerManifest('{ "tasks": [{ "spec": "s" }] }'), false);
    assert.equal(looksLikeRingerManifest('not json'), false);
  });

  it('config.toml: where Ringer looks for it ($RINGER_CONFIG, else $XDG_CONFIG_HOME/ringer, else ~/.config/ringer)', () => {
    assert.equal(ringerConfigPath({ RINGER_CONFIG: '/x/c.toml' }), '/x/c.toml');
    assert.equal(ringerConfigPath({ XDG_CONFIG_HOME: '/xdg' }), '/xdg/ringer/config.toml');
    assert.equal(ringerConfigPath({}), path.join(os.homedir(), '.config', 'ringer', 'config.toml'));
    assert.deepEqual(loadRingerConfig({ XDG_CONFIG_HOME: tempDir() }), { config: {}, file: null, notes: [] });
  });

  it('config.toml: identity_default, allow_full_access and [engines.NAME] are taken over; a built-in name is not (said why)', () => {
    const file = path.join(RINGER, 'config.toml');
    const r = loadRingerConfig({ RINGER_CONFIG: file });
    assert.equal(r.file, file);
    assert.equal(r.config.identity, 'ringer-laptop');
    assert.equal(r.config.allow_full_access, true);
    assert.deepEqual(Object.keys(r.config.engines ?? {}), ['aider']);
    assert.match(r.notes.join('\n'), /\[engines\.codex\] not taken over: Verdict's built-in codex engine/);
    // The engine is a valid Verdict engine and expands like Ringer's: {model_args} → -m <model_default>, {access_args} → sandbox_args.
    const aider = resolveEngines(r.config.engines, file).get('aider');
    assert.ok(aider);
    assert.equal(aider.binary, 'aider');
    assert.equal(aider.defaultModel, 'openrouter/z-ai/glm-5.2');
    assert.deepEqual(expandArgv(aider, { spec: 'do it', taskdir: '/t', model: null, engineArgs: ['--x'], fullAccess: false }), [
      '--yes',
      '-m',
      'openrouter/z-ai/glm-5.2',
      '--x',
      '--message',
      'do it',
    ]);
    // And through the settings: the identity default and the full-access permission.
    const s = settingsFromConfig(r.config, file);
    assert.equal(s.allowFullAccess, true);
    assert.equal(resolveIdentity({ cwd: tempDir(), configDefault: s.identity, env: {} }).identity, 'ringer-laptop');
  });

  it("Verdict's JSON config wins field by field; engines merge by name", () => {
    const dir = tempDir();
    const json = path.join(dir, 'verdict.json');
    fs.writeFileSync(json, JSON.stringify({ identity: 'verdict-id', allow_full_access: false, engines: { mine: { binary: 'mine', argv: ['{spec}'] } } }));
    const u = loadUserConfig(json, { RINGER_CONFIG: path.join(RINGER, 'config.toml') });
    assert.equal(u.config.identity, 'verdict-id');
    assert.equal(u.config.allow_full_access, false);
    assert.deepEqual(Object.keys(u.config.engines ?? {}).sort(), ['aider', 'mine']);
    assert.equal(u.ringer.file, path.join(RINGER, 'config.toml'));
    // Without a JSON config the Ringer values stand.
    const only = loadUserConfig(undefined, { XDG_CONFIG_HOME: dir, RINGER_CONFIG: path.join(RINGER, 'config.toml') });
    assert.equal(only.config.identity, 'ringer-laptop');
    // VERDICT_RINGER_CONFIG=0: not read at all.
    assert.equal(
      loadUserConfig(undefined, { XDG_CONFIG_HOME: dir, RINGER_CONFIG: path.join(RINGER, 'config.toml'), VERDICT_RINGER_CONFIG: '0' }).config.identity,
      undefined,
    );
  });

  it('a malformed config.toml is an error naming file:line:column; a wrong type names the key', () => {
    const dir = tempDir();
    const bad = path.join(dir, 'config.toml');
    fs.writeFileSync(bad, 'identity_default = "x"\nallow_full_access = tru\nstate_dir = "y"\n');
    assert.throws(() => loadRingerConfig({ RINGER_CONFIG: bad }), new RegExp(`^Error: ${bad}:2:\\d+: malformed TOML`));
    fs.writeFileSync(bad, 'allow_full_access = "yes"\n');
    assert.throws(() => loadRingerConfig({ RINGER_CONFIG: bad }), /allow_full_access: must be true or false, got "yes"/);
    fs.writeFileSync(bad, '[engines.x]\nargs_template = "run {spec}"\n');
    assert.throws(() => loadRingerConfig({ RINGER_CONFIG: bad }), /engines\.x\.args_template: must be an array of strings/);
  });
});
