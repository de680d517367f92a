import assert from 'node:assert/strict';
import { builtinEngines, customEngineFromConfig } from '../../../engines';
import { engineFixture } from './fixture';

const engines = builtinEngines();
const classify = (engine: string, tail: string) => engines.get(engine)!.classifyError(tail);

describe('engine error classification', () => {
  for (const name of ['codex', 'claude', 'opencode', 'gemini', 'grok']) {
    it(`${name}: real 429 -> rate_limit, real 401 -> auth, a good run -> null`, () => {
      assert.equal(classify(name, engineFixture(`${name}-error`)), 'rate_limit');
      assert.equal(classify(name, engineFixture(`${name}-auth`)), 'auth');
      assert.equal(classify(name, engineFixture(name)), null);
    });
  }

  it('reads error events only: a prompt or tool output that mentions rate limits or 401 does not count', () => {
    const log = [
      JSON.stringify({ type: 'message', role: 'user', content: 'Handle HTTP 429 rate limit and 401 invalid api key' }),
      JSON.stringify({ type: 'tool_result', tool_id: 't1', status: 'success', output: 'Error: 403 Forbidden' }),
      JSON.stringify({ type: 'result', status: 'success', stats: { input_tokens: 1 } }),
    ].join('\n');
    assert.equal(classify('gemini', log), null);
  });

  it('plain stderr lines: limits and login problems are recognised; stack positions are not statuses', () => {
    assert.equal(classify('codex', "■ You've hit your usage limit. Try again later."), 'rate_limit');
    assert.equal(classify('claude', 'Invalid API key · Please run /login'), 'auth');
    assert.equal(classify('opencode', 'request failed: HTTP 403 Forbidden'), 'auth');
    assert.equal(classify('grok', '❌ Error: API key required. Set GROK_API_KEY environment variable'), 'auth');
    // Gemini CLI 0.61.0 run with no key (test/e2e/real-gemini.e2e.test.ts), its whole log:
    assert.equal(
      classify(
        'gemini',
        'YOLO mode is enabled. All tool calls will be automatically approved.\nWhen using Gemini API, you must specify the GEMINI_API_KEY environment variable.\nUpdate your environment and try again (no reload needed if using .env)!\n',
      ),
      'auth',
    );
    assert.equal(classify('codex', 'TypeError: cannot read x\n    at run (/app/cli.js:429:7)\n    at main (/app/cli.js:401:3)'), 'engine_error');
    assert.equal(classify('codex', 'Reading additional input from stdin...\nall good'), null);
  });

  it("codex: its own error for an unset key variable (its provider's env_key) is auth, read from its error events only", () => {
    // codex 0.171.0 run with the variable its config's env_key names left unset (capture.ts codex:nokey), its whole log:
    // `Missing environment variable: \`VERDICT_TEST_MODEL_KEY\`.` in an error event and the turn.failed.
    assert.equal(classify('codex', engineFixture('codex-nokey')), 'auth');
    // The same words as a plain line or in a command's output (the worker's own program) are no error event of codex's.
    assert.equal(classify('codex', 'Missing environment variable: `DATABASE_URL`.'), null);
    const toolOutput = JSON.stringify({
      type: 'item.completed',
      item: { type: 'command_execution', aggregated_output: 'Missing environment variable: `DATABASE_URL`.', status: 'failed' },
    });
    assert.equal(classify('codex', toolOutput), null);
    // Another engine's structured error saying it is not about a key: not this rule's.
    assert.equal(classify('codex', JSON.stringify({ type: 'turn.failed', error: { message: 'environment variable missing from sandbox' } })), 'engine_error');
    // A rate limit in the same tail still wins (it must be requeued).
    assert.equal(classify('codex', engineFixture('codex-nokey') + engineFixture('codex-error')), 'rate_limit');
  });

  it('a structured error that names no known cause is an engine_error', () => {
    assert.equal(classify('codex', JSON.stringify({ type: 'turn.failed', error: { message: 'model produced invalid patch' } })), 'engine_error');
    assert.equal(classify('opencode', JSON.stringify({ type: 'error', error: { name: 'UnknownError', data: { message: 'boom' } } })), 'engine_error');
  });

  it('a rate limit wins over an auth hint in the same tail', () => {
    assert.equal(classify('codex', 'warning: 401 on telemetry\n' + engineFixture('codex-error')), 'rate_limit');
  });

  it('script never classifies; a custom engine with output "none" reads plain lines', () => {
    assert.equal(classify('script', engineFixture('codex-error') + '\nError: 429 Too Many Requests'), null);
    const custom = customEngineFromConfig('tool', { binary: 'tool', argv: ['{spec}'] }, 'verdict.json');
    assert.equal(custom.classifyError('error: 429 Too Many Requests'), 'rate_limit');
    assert.equal(custom.classifyError('Error: config file missing'), 'engine_error');
    assert.equal(custom.classifyError('wrote 3 files'), null);
  });
});
