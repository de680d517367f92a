import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadScoreboard } from '../../extension/core/scoreboard/load';
import { scoreboardText } from '../../extension/cli/models-command';
import { tempDir } from '../helpers/fixtures';

/** A Verdict-format eval row with the fields the scoreboard reads. */
function row(key: string, verdict: string, model: string | null, engine: string, second: number) {
  return {
    run_id: 'r1',
    task_key: key,
    spec: 's',
    worker_engine: engine,
    verdict,
    duration_ms: 10,
    worker_tokens: null,
    model,
    task_type: engine === 'script' ? 'script' : 'parser',
    retry: false,
    identity: 'me',
    notes: '',
    attempt: 1,
    harness: engine,
    lab: null,
    reported_model: null,
    tokens_in: null,
    tokens_out: null,
    cost_microusd: null,
    ended_at: `2026-01-01T00:00:${String(second).padStart(2, '0')}.000Z`,
    step: 'work',
    group: null,
    candidate: null,
  };
}

async function text(rows: object[]): Promise<string[]> {
  const home = tempDir();
  fs.writeFileSync(path.join(home, 'runs.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return scoreboardText((await loadScoreboard({ home })).view);
}

describe('verdict models: the line when no model has judged attempts', () => {
  it('after the demo (script engine only: no model) it points at the quarantined attempts, not at errors there are none of', async () => {
    const out = await text([row('fizzbuzz', 'PASS', null, 'script', 1), row('lying', 'FAIL', null, 'script', 2)]);
    assert.match(out[0] ?? '', /no stamped model/, out.join('\n'));
    assert.doesNotMatch(out[0] ?? '', /error/, out.join('\n'));
    assert.ok(
      out.some((l) => l.startsWith('quarantined: 2 attempt(s)')),
      out.join('\n'),
    );
  });

  it('with only engine errors it points at them', async () => {
    const out = await text([row('t1', 'ERROR', 'gamma', 'codex', 1)]);
    assert.match(out[0] ?? '', /engine errors and rate limits/, out.join('\n'));
    assert.doesNotMatch(out[0] ?? '', /no stamped model/, out.join('\n'));
    assert.ok(out.includes('kept out of the rates (engine errors and rate limits):'), out.join('\n'));
  });

  it('with nothing at all it names nothing below', async () => {
    const out = await text([]);
    assert.deepEqual(out, ['no judged attempts of any model match (PASS, FAIL and TIMEOUT count)']);
  });
});
