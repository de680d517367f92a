import assert from 'node:assert/strict';
import { builtinEngines, customEngineFromConfig } from '../../../engines';
import { engineFixture } from './fixture';
import { parseReviewAnswer } from '../../../extension/core/run/review-verdict';

// The captured runs (test/fixtures/engines, real CLIs against the scripted model server) end with the model's final
// text "Done: created alpha.txt" after a tool call; the error captures end in HTTP 429 / 401 with no answer.
const engines = builtinEngines();
const finalOf = (engine: string, fixture: string): string | null => engines.get(engine)!.finalMessage(engineFixture(fixture));

describe('engines: the final message on real CLI output', () => {
  for (const engine of ['codex', 'claude', 'opencode', 'gemini', 'grok']) {
    it(`${engine}: the model's final text of a passing run; null for the rate-limited and the unauthorized run`, () => {
      assert.equal(finalOf(engine, engine), 'Done: created alpha.txt');
      assert.equal(finalOf(engine, `${engine}-error`), null);
      assert.equal(finalOf(engine, `${engine}-auth`), null);
    });
  }

  it("a reviewer's real log (the review step, captured): the answer read from the final message", () => {
    assert.deepEqual(parseReviewAnswer(finalOf('codex', 'codex-review')), { ok: true, answer: { verdict: 'approve', concerns: [] } });
    // opencode answered in a fenced json block.
    assert.match(finalOf('opencode', 'opencode-review') ?? '', /^```json\n/);
    assert.deepEqual(parseReviewAnswer(finalOf('opencode', 'opencode-review')), {
      ok: true,
      answer: { verdict: 'changes', concerns: ["alpha.txt: say 'alpha done'"] },
    });
  });

  it('codex: the last agent_message, not a tool command or an earlier message; a later turn.failed cancels it', () => {
    const log = engineFixture('codex');
    const earlier = '{"type":"item.completed","item":{"id":"item_9","type":"agent_message","text":"first thoughts"}}\n';
    assert.equal(engines.get('codex')!.finalMessage(earlier + log), 'Done: created alpha.txt');
    assert.equal(engines.get('codex')!.finalMessage(log + '{"type":"turn.failed","error":{"message":"boom"}}\n'), null);
  });

  it('opencode: the text parts of the last message joined, not the earlier message', () => {
    const part = (msg: string, text: string) => JSON.stringify({ type: 'text', part: { messageID: msg, type: 'text', text } });
    const log = [part('m1', 'plan'), part('m2', '{"verdict":'), part('m2', '"approve","concerns":[]}')].join('\n');
    assert.equal(engines.get('opencode')!.finalMessage(log), '{"verdict":"approve","concerns":[]}');
  });

  it('gemini: streamed deltas after the last tool result are one answer', () => {
    const msg = (content: string) => JSON.stringify({ type: 'message', role: 'assistant', content, delta: true });
    const log = [
      msg('Let me look.'),
      JSON.stringify({ type: 'tool_use', tool_name: 'read_file' }),
      JSON.stringify({ type: 'tool_result', status: 'success' }),
      msg('{"verdict":"changes",'),
      msg('"concerns":["a.py:1 typo"]}'),
      JSON.stringify({ type: 'result', status: 'success' }),
    ].join('\n');
    assert.equal(engines.get('gemini')!.finalMessage(log), '{"verdict":"changes","concerns":["a.py:1 typo"]}');
  });

  it('claude: without a result event, the text of the last real assistant message', () => {
    const lines = engineFixture('claude').trim().split('\n');
    assert.equal(engines.get('claude')!.finalMessage(lines.slice(0, -1).join('\n')), 'Done: created alpha.txt');
  });

  it('script and custom engines with output none: the last non-empty line of the output', () => {
    const log = 'reading the diff\nwarning: something on stderr\n{"verdict":"approve","concerns":[]}\n\n';
    assert.equal(engines.get('script')!.finalMessage(log), '{"verdict":"approve","concerns":[]}');
    const custom = customEngineFromConfig('rev', { binary: 'rev', argv: ['{spec}'] }, 'test');
    assert.equal(custom.finalMessage(log), '{"verdict":"approve","concerns":[]}');
    assert.equal(custom.finalMessage(''), null);
  });

  it("a custom engine with output codex reads codex's final message", () => {
    const custom = customEngineFromConfig('mycodex', { binary: 'codex', argv: ['exec', '{spec}'], output: 'codex' }, 'test');
    assert.equal(custom.finalMessage(engineFixture('codex')), 'Done: created alpha.txt');
  });
});
