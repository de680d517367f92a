import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cliVersion, TESTED_CLIS, versionStatus, versionWarning } from '../../../engines/tested-versions';
import { AGENT_CLIS } from '../../helpers/agent-clis';
import { engineVersionWarnings } from '../../../extension/core/run/engine-versions';
import { tempDir } from '../../helpers/fixtures';

describe('tested CLI versions (engines/tested-versions.ts)', () => {
  it('reads the version out of what each CLI prints for --version', () => {
    assert.equal(cliVersion('2.1.332 (Claude Code)'), '2.1.332');
    assert.equal(cliVersion('codex-cli 0.171.0'), '0.171.0');
    assert.equal(cliVersion('0.61.0\n'), '0.61.0');
    assert.equal(cliVersion('claude: command failed'), null);
  });

  it('tested, untested of a tested major, untested major (0.x: the minor is the major), unknown', () => {
    assert.equal(versionStatus('claude', '2.1.332 (Claude Code)').status, 'tested');
    assert.equal(versionStatus('claude', '2.2.0 (Claude Code)').status, 'untested');
    assert.equal(versionStatus('claude', '3.0.0 (Claude Code)').status, 'untested-major');
    assert.equal(versionStatus('gemini', '0.61.4').status, 'untested');
    assert.equal(versionStatus('gemini', '0.62.0').status, 'untested-major');
    assert.equal(versionStatus('my-cli', '1.0.0').status, 'unknown');
    // grok-cli 0.0.34 prints 1.0.1 for --version: that is what is compared.
    assert.equal(versionStatus('grok', '1.0.1').status, 'tested');
    assert.equal(versionStatus('grok', '0.0.34').status, 'untested-major');
    assert.equal(versionStatus('claude', null).status, 'unknown');
    assert.equal(versionWarning('claude', '2.2.0 (Claude Code)'), null, 'a new minor of a tested major is no warning');
    assert.match(
      versionWarning('claude', '3.0.0 (Claude Code)') ?? '',
      /^engine claude: its CLI is 3\.0\.0, a major version Verdict has not been tested with \(tested: 2\.1\.332\)/,
    );
  });

  it('the e2e tier installs exactly the newest tested version of every engine it runs', () => {
    for (const [name, cli] of Object.entries(AGENT_CLIS))
      assert.deepEqual([cli.pkg, cli.version], [TESTED_CLIS[name]?.pkg, TESTED_CLIS[name]?.versions.at(-1)], name);
  });

  it('at run start: a warning for each engine whose CLI prints an untested major version; none for a tested one or a custom engine', async () => {
    const dir = tempDir('verdict-versions-');
    const fake = (name: string, printed: string) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, `#!/bin/sh\necho '${printed}'\n`, { mode: 0o755 });
      return file;
    };
    const binaries = new Map([
      ['claude', fake('claude', '3.0.1 (Claude Code)')],
      ['gemini', fake('gemini', '0.61.0')],
      ['my-cli', fake('my-cli', '9.9.9')],
      ['codex', path.join(dir, 'missing')],
    ]);
    const warnings = await engineVersionWarnings(binaries, { PATH: process.env.PATH });
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0] ?? '', /^engine claude: its CLI is 3\.0\.1, a major version Verdict has not been tested with/);
  });

  it("asking a CLI its version leaves the user's home as it was: --version runs in a throwaway home, removed after", async () => {
    const dir = tempDir('verdict-versions-home-');
    const home = path.join(dir, 'home');
    fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
    const settings = '{"general": {"disableAutoUpdate": true}}\n';
    fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), settings);
    // As Gemini CLI 0.61.0 does on --version: rewrites its settings and leaves a temporary file beside them.
    const seen = path.join(dir, 'seen');
    const cli = path.join(dir, 'gemini');
    // And as codex 0.171.0 does: a CODEX_HOME that does not exist is an error.
    fs.writeFileSync(
      cli,
      `#!/bin/sh\n[ -d "$CODEX_HOME" ] || { echo "CODEX_HOME points to $CODEX_HOME, but that path does not exist"; exit 1; }\nmkdir -p "$HOME/.gemini" && echo '{}' > "$HOME/.gemini/settings.json" && touch "$HOME/.gemini/projects.json.1.tmp"\necho "$HOME $XDG_CONFIG_HOME $CODEX_HOME" > '${seen}'\necho 9.0.0\n`,
      { mode: 0o755 },
    );
    const env = { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), CODEX_HOME: path.join(home, '.codex') };
    const warnings = await engineVersionWarnings(new Map([['gemini', cli]]), env);
    assert.match(warnings[0] ?? '', /^engine gemini: its CLI is 9\.0\.0/, 'the version was still read');
    assert.equal(fs.readFileSync(path.join(home, '.gemini', 'settings.json'), 'utf8'), settings);
    assert.deepEqual(fs.readdirSync(path.join(home, '.gemini')), ['settings.json']);
    const [cliHome, config, codex] = fs.readFileSync(seen, 'utf8').trim().split(' ');
    assert.ok(cliHome !== home && !fs.existsSync(cliHome as string), `a throwaway home (${cliHome}), removed after`);
    assert.ok(config?.startsWith(cliHome as string) && codex?.startsWith(cliHome as string), 'the XDG and engine homes too');
  });
});

describe('unknown event types (engines/jsonl.ts unknownEventTypes)', () => {
  it('names each unknown type once, in order, at most five; an odd name is not repeated verbatim', async () => {
    const { unknownEventTypes } = await import('../../../engines/jsonl');
    const log = [
      '{"type":"result"}',
      '{"type":"new_a"}',
      'plain text',
      '{"type":"new_a"}',
      '{"type":"new b\\u001b[31m"}',
      '{"no":"type"}',
      '{"type":"new_c"}',
    ].join('\n');
    assert.deepEqual(unknownEventTypes(log, ['result']), ['new_a', '(odd type)', 'new_c']);
    assert.deepEqual(unknownEventTypes(Array.from({ length: 9 }, (_, i) => `{"type":"t${i}"}`).join('\n'), []).length, 5);
  });

  it('claude, gemini, codex and opencode: an unknown event inserted anywhere before the final event changes nothing their parsers read', async () => {
    const { builtinEngines } = await import('../../../engines');
    const { engineFixture } = await import('./fixture');
    const { unknownEventTypes } = await import('../../../engines/jsonl');
    // The new event carries fields the known ones use (usage, tokens, an error, text), so a parser that read it would show.
    const NEW =
      '{"type":"brand_new_event","usage":{"input_tokens":999999,"output_tokens":999999},"part":{"tokens":{"input":999999},"reason":"stop"},"error":{"message":"boom"},"status":"error","result":"forged"}';
    for (const name of ['claude', 'gemini', 'codex', 'opencode']) {
      const engine = builtinEngines().get(name)!;
      assert.ok(engine.eventTypes?.length, `${name} lists the event types it knows`);
      const captures = fs
        .readdirSync(new URL('../../fixtures/engines/', import.meta.url))
        .filter((f) => f.startsWith(`${name}`) && f.endsWith('.jsonl'))
        .map((f) => f.replace(/\.jsonl$/, ''));
      assert.ok(captures.length >= 3, `${name}: ${captures.join(', ')}`);
      for (const fixture of captures) {
        const lines = engineFixture(fixture).trimEnd().split('\n');
        const known = lines.join('\n');
        assert.deepEqual(unknownEventTypes(known, engine.eventTypes ?? []), [], `${fixture}: its real capture has no unknown event`);
        for (let at = 0; at < lines.length; at++) {
          const withNew = [...lines.slice(0, at), NEW, ...lines.slice(at)].join('\n');
          assert.deepEqual(engine.parseOutput(withNew), engine.parseOutput(known), `${fixture}, new event before line ${at + 1}`);
          assert.equal(engine.finalMessage(withNew), engine.finalMessage(known), `${fixture}, new event before line ${at + 1}`);
          assert.deepEqual(unknownEventTypes(withNew, engine.eventTypes ?? []), ['brand_new_event'], fixture);
        }
      }
    }
  });
});
