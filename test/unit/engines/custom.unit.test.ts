import assert from 'node:assert/strict';
import { builtinEngines, customEngineFromConfig, expandArgv, resolveEngines } from '../../../engines';
import { engineFixture } from './fixture';

const WHERE = '/home/me/.verdict/config.json';
const aider = {
  binary: 'aider',
  argv: ['--yes-always', '{access}', ['--model', '{model}'], '{engine_args}', '--message', '{spec}'],
  env: { AIDER_CHECK_UPDATE: 'false' },
  install: 'pipx install aider-chat',
  full_access_argv: ['--no-git'],
  sandbox_argv: [],
};
const bad =
  (entry: unknown, name = 'aider') =>
  () =>
    customEngineFromConfig(name, entry, WHERE);

describe('custom engines from configuration', () => {
  it('builds an EngineSpec from an entry, with defaults for what it leaves out', () => {
    const engine = customEngineFromConfig('aider', aider, WHERE);
    assert.equal(engine.name, 'aider');
    assert.equal(engine.harness, 'aider');
    assert.equal(engine.binary, 'aider');
    assert.equal(engine.install, 'pipx install aider-chat');
    assert.deepEqual(engine.env, { AIDER_CHECK_UPDATE: 'false' });
    assert.equal(engine.defaultModel, null);
    assert.equal(engine.retryContext, 'prompt');
    assert.deepEqual(expandArgv(engine, { spec: 'do it', taskdir: '/t', model: 'gpt-x', engineArgs: ['--lint'], fullAccess: true }), [
      '--yes-always',
      '--no-git',
      '--model',
      'gpt-x',
      '--lint',
      '--message',
      'do it',
    ]);
    assert.deepEqual(engine.parseOutput('anything'), builtinEngines().get('script')!.parseOutput(''));
  });

  it('max_attempt_usd and max_attempt_tokens are the budget reserves of one attempt (micro-USD, tokens); 0 tokens is refused', () => {
    const engine = customEngineFromConfig('aider', { ...aider, max_attempt_usd: 0.25, max_attempt_tokens: 200_000 }, WHERE);
    assert.deepEqual([engine.maxAttemptMicroUsd, engine.maxAttemptTokens], [250_000, 200_000]);
    assert.throws(() => customEngineFromConfig('aider', { ...aider, max_attempt_tokens: 0 }, WHERE), /max_attempt_tokens/);
  });

  it('reuses a built-in output reader named by "output"', () => {
    const engine = customEngineFromConfig('my-claude', { binary: 'claude-wrapper', argv: ['{spec}'], output: 'claude', model: 'sonnet' }, WHERE);
    assert.equal(engine.defaultModel, 'sonnet');
    assert.equal(engine.parseOutput(engineFixture('claude')).costMicroUsd, 8154);
    assert.equal(engine.classifyError(engineFixture('claude-error')), 'rate_limit');
  });

  it("credential_env: declared, else the output reader's, else none; a name that is no variable name is refused", () => {
    assert.deepEqual(customEngineFromConfig('aider', { ...aider, credential_env: ['AIDER_API_KEY'] }, WHERE).credentialEnv, ['AIDER_API_KEY']);
    assert.deepEqual(customEngineFromConfig('my-codex', { binary: 'codex-wrapper', argv: ['{spec}'], output: 'codex' }, WHERE).credentialEnv, [
      'OPENAI_API_KEY',
      'CODEX_API_KEY',
    ]);
    assert.deepEqual(customEngineFromConfig('aider', aider, WHERE).credentialEnv, []);
    assert.throws(bad({ ...aider, credential_env: ['MY KEY'] }), /aider\.credential_env\[0\] must match pattern/);
  });

  it('names the file and the field path of each problem', () => {
    assert.throws(bad({ argv: ['{spec}'] }), { message: `${WHERE}: aider.binary is required` });
    assert.throws(bad({ ...aider, argv: ['{spec}', 7] }), { message: `${WHERE}: aider.argv[1] must be a string or an array of strings` });
    assert.throws(bad({ ...aider, env: { A: 1 } }), { message: `${WHERE}: aider.env.A must be string` });
    assert.throws(bad({ ...aider, output: 'cursor' }), /aider\.output must be one of "codex", "claude", "opencode", "gemini", "grok", "none"/);
    assert.throws(bad({ ...aider, full_acess_argv: [] }), { message: `${WHERE}: aider.full_acess_argv is not a known field` });
    assert.throws(bad({ ...aider, argv: ['--message', '{prompt}'] }), {
      message: new RegExp(`^${WHERE}: aider\\.argv\\[1\\]: unknown placeholder \\{prompt\\}`),
    });
    assert.throws(bad('aider --message'), { message: `${WHERE}: aider must be object` });
    assert.throws(bad(aider, '../evil'), { message: new RegExp(`^${WHERE}: engine name "\\.\\./evil"`) });
  });

  it('reports every problem of an entry at once', () => {
    assert.throws(
      bad({ binary: '', argv: 'x' }),
      (e: Error) => /aider\.binary must NOT have fewer than 1 characters/.test(e.message) && /aider\.argv must be array/.test(e.message),
    );
  });
});

describe('engine registry', () => {
  it('has the six built-in engines, each complete', () => {
    const engines = builtinEngines();
    assert.deepEqual([...engines.keys()].sort(), ['claude', 'codex', 'gemini', 'grok', 'opencode', 'script']);
    for (const [name, engine] of engines) {
      assert.equal(engine.name, name);
      assert.ok(engine.binary && engine.harness && engine.install, name);
      assert.equal(engine.retryContext, name === 'script' ? 'file' : 'prompt');
    }
  });

  it('resolveEngines adds custom engines and lets an entry replace a built-in', () => {
    const engines = resolveEngines({ aider, codex: { binary: '/opt/codex/bin/codex', argv: ['exec', '--json', '{spec}'], output: 'codex' } }, WHERE);
    assert.equal(engines.size, 7);
    assert.equal(engines.get('aider')!.binary, 'aider');
    assert.equal(engines.get('codex')!.binary, '/opt/codex/bin/codex');
    assert.equal(engines.get('codex')!.parseOutput(engineFixture('codex')).tokensIn, 2468);
    assert.equal(builtinEngines().get('codex')!.binary, 'codex', 'built-ins are not modified');
    assert.equal(resolveEngines().size, 6);
  });

  it('resolveEngines names the file of a bad entry', () => {
    assert.throws(() => resolveEngines({ x: { binary: 'x' } }, 'settings: verdict.engines'), { message: 'settings: verdict.engines: x.argv is required' });
  });
});
