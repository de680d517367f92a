import assert from 'node:assert/strict';
import { builtinEngines } from '../../engines';
import { emptyUsage } from '../../engines/types';
import { Budget } from '../../extension/core/cost/budget';
import { engineFixture } from './engines/fixture';
import { priorSpend, REVIEWER, RunSpend, type SpendHold } from '../../extension/core/run/spend';
import { tempDir } from '../helpers/fixtures';
import fs from 'node:fs';
import { snapshotPath } from '../../extension/core/catalog/snapshot';

describe('budget: reservations, spend reported while attempts run, task envelopes', () => {
  it("a running attempt's reported spend counts: it passes the cap, holds more than its reservation, and is charged when its final cost is unknown", () => {
    const b = new Budget(10_000);
    const r = b.reserve('e/m', null, true, { maxAttemptMicroUsd: 4_000 });
    assert.ok(r && !('waitFor' in r));
    b.progress(r, 3_000);
    b.progress(r, 2_000); // a lower figure later (a forged or reordered line) never lowers it
    assert.equal(r.liveMicroUsd, 3_000);
    assert.equal(b.exceeded, false);
    // A second attempt: 4000 held by the first (its reservation is larger than what it reported) + 4000 ≤ 10000.
    const r2 = b.reserve('e/m', null, true, { maxAttemptMicroUsd: 4_000 });
    assert.ok(r2 && !('waitFor' in r2));
    b.progress(r2, 7_500);
    // 3000 + 7500 reported: past the cap while both still run; a third cannot start.
    assert.equal(b.exceeded, true);
    assert.equal(b.reserve('e/m', null, true, { maxAttemptMicroUsd: 1 }), null);
    b.settle(r2, null);
    assert.equal(b.spentMicroUsd, 7_500, 'unknown final cost: the larger of the reservation and the reported spend');
    b.settle(r, 3_500);
    assert.equal(b.spentMicroUsd, 11_000, 'a known final cost above what it reported is what is charged');
    b.settle(r, 3_500);
    assert.equal(b.spentMicroUsd, 11_000, 'settling twice charges once');
    b.progress(r, 99_000);
    assert.equal(b.spentLiveMicroUsd, 11_000, 'progress after settle changes nothing');
  });

  it('an engine of unknown price with no max_attempt_usd runs one attempt at a time; max_attempt_usd lifts that', () => {
    const b = new Budget(100_000);
    const first = b.reserve('e/m', null);
    assert.ok(first && 'unpriced' in first && first.unpriced);
    assert.deepEqual(b.reserve('e/m', null), { waitFor: 'e/m' });
    const bounded = b.reserve('e/m', null, true, { maxAttemptMicroUsd: 5_000 });
    assert.ok(bounded && !('waitFor' in bounded) && !bounded.unpriced && bounded.microUsd === 5_000);
    // The p90 of the eval log comes before max_attempt_usd.
    assert.equal(b.estimate('e/m', null, { historyMicroUsd: 700, maxAttemptMicroUsd: 5_000 }), 700);
  });

  it('an attempt nothing bounded that ends with its cost unknown refuses the next unbounded one of its key under a cap (its spend cannot be counted)', () => {
    for (const end of ['settle', 'priced'] as const) {
      const b = new Budget(5_000);
      const first = b.reserve('cx/', null);
      assert.ok(first && 'unpriced' in first && first.unpriced);
      if (end === 'priced') b.priced(first, null, true);
      b.settle(first, null, true);
      assert.equal(b.spentMicroUsd, 0, 'nothing bounded it and it reported no cost: 0 is all that can be charged');
      assert.equal(b.reserve('cx/', null), null, `after ${end}: a second unbounded attempt of the key is refused`);
      assert.equal(b.wouldRefuse('cx/', null), true, 'routing skips it too');
      assert.match(
        b.refusal('cx/', null),
        /the cost of cx stays unknown: an attempt on it ended with no cost reported .*budget_usd cannot count its attempts; the attempt was not started\. Give the engine or the task a max_attempt_usd/,
      );
      // What bounds an attempt lets it start: max_attempt_usd, a p90 from the eval log; another key is not affected.
      const bounded = b.reserve('cx/', null, true, { maxAttemptMicroUsd: 2_000 });
      assert.ok(bounded && !('waitFor' in bounded) && bounded.microUsd === 2_000);
      assert.equal(b.wouldRefuse('cx/', null, { historyMicroUsd: 1_000 }), false);
      assert.ok(b.reserve('other/', null));
    }
    // An attempt that reported a priced spend while running, or a known final cost, leaves its key open.
    const b = new Budget(100_000);
    const streamed = b.reserve('oc/m', null);
    assert.ok(streamed && !('waitFor' in streamed));
    b.progress(streamed, 300);
    b.settle(streamed, null);
    const known = b.reserve('cl/m', null);
    assert.ok(known && !('waitFor' in known));
    b.settle(known, 0);
    assert.ok(b.reserve('oc/m', null) && b.reserve('cl/m', null));
    // An attempt that reported no tokens (a script: nothing shows it spends), no cap, or a tokens budget: not refused.
    const script = new Budget(100_000);
    const s1 = script.reserve('script/', null);
    assert.ok(s1 && !('waitFor' in s1));
    script.settle(s1, null, false);
    assert.ok(script.reserve('script/', null));
    const free = new Budget(null);
    const r = free.reserve('cx/', null);
    assert.ok(r && !('waitFor' in r));
    free.settle(r, null, true);
    assert.ok(free.reserve('cx/', null));
    // In tokens: an engine that spends and ended without reporting them is refused the same way.
    const t = new Budget(10_000, 'tokens');
    const tr = t.reserve('oc/', null);
    assert.ok(tr && !('waitFor' in tr));
    t.settle(tr, null, true);
    assert.equal(t.reserve('oc/', null), null);
    assert.match(t.refusal('oc/', null), /the tokens of oc stay unknown: .*budget_tokens cannot count its attempts.*max_attempt_tokens/);
    // The keys are kept for a resumed run's budget, which refuses them at once.
    assert.deepEqual(t.uncountedKeys(), ['oc/']);
    const resumed = new Budget(10_000, 'tokens');
    resumed.seedUncounted(t.uncountedKeys());
    assert.equal(resumed.reserve('oc/', null), null);
  });

  it('a task envelope bounds its attempts without a run cap, and names itself in the refusal', () => {
    const b = new Budget(null);
    const task = { key: 't', capMicroUsd: 3_000 };
    const r = b.reserve('e/m', null, true, { maxAttemptMicroUsd: 2_000, task });
    assert.ok(r && !('waitFor' in r));
    b.progress(r, 3_100);
    assert.equal(b.taskExceeded('t'), true);
    assert.equal(b.exceeded, false, 'no run cap');
    b.settle(r, 2_900);
    assert.equal(b.taskExceeded('t'), true, 'a final cost below what it reported does not take the task back under its cap');
    assert.equal(b.reserve('e/m', null, true, { maxAttemptMicroUsd: 2_000, task }), null);
    assert.match(
      b.refusal('e/m', null, { maxAttemptMicroUsd: 2_000, task }),
      /task t has \$0\.0031 spent, and this attempt may cost up to \$0\.0031: that would pass the task's budget_usd \$0\.0030/,
    );
    // Another task is not bound by t's envelope.
    assert.ok(b.reserve('e/m', null, true, { maxAttemptMicroUsd: 2_000, task: { key: 'u', capMicroUsd: null } }));
  });

  it("a worker that writes a small final event into its engine's output after large streamed usage does not lower the spend counted (the cap stays a cap)", () => {
    // The worker's tool writes a Claude Code `result` with tiny totals into its CLI's stdout (/proc/<pid>/fd/1) and kills
    // the CLI, so that forged result is the log's only one: parseOutput believes it, as nothing tells it from a real one.
    const claude = builtinEngines().get('claude');
    assert.ok(claude?.streamUsage);
    const lines = engineFixture('claude').split('\n');
    const result = lines.find((l) => l.includes('"type":"result"')) ?? '';
    const streamed = lines.filter((l) => l !== result).join('\n');
    const forged = JSON.parse(result) as Record<string, unknown>;
    forged.total_cost_usd = 0.000001;
    forged.usage = { input_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 };
    forged.modelUsage = { m: { inputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0, outputTokens: 1, thinkingTokens: 0 } };
    const log = `${streamed}\n${JSON.stringify(forged)}\n`;
    const final = claude.parseOutput(log);
    assert.deepEqual([final.costMicroUsd, final.tokensIn, final.tokensOut], [1, 1, 1], 'the forged result is what the log says at its end');
    const running = claude.streamUsage(streamed);
    const spend = new RunSpend(tempDir(), null, null, { budgetTokens: 2_000 });
    const hold = spend.admit({ name: 'claude' }, 'm', { key: 'a', taskType: 'test' });
    assert.ok(typeof hold !== 'string' && !('waitFor' in hold));
    spend.progress('a', running, 'm');
    const counted = spend.snapshot().tokens?.spent ?? 0;
    assert.ok(counted >= 2_470, `the streamed usage counts: ${counted}`);
    spend.workerEnded('a', final.costMicroUsd, (final.tokensIn ?? 0) + (final.tokensOut ?? 0));
    spend.settle(hold, final.costMicroUsd, (final.tokensIn ?? 0) + (final.tokensOut ?? 0));
    assert.equal(spend.snapshot().tokens?.spent, counted, 'settled with the forged totals: what counted before still counts (it fell to 2)');
    assert.equal(spend.overBudget() !== null, true, 'the token budget stays passed');
    // The same in micro-USD: 5,000 reported while running, a final cost of 1 forged.
    const b = new Budget(4_000);
    const r = b.reserve('e/m', null, true, { maxAttemptMicroUsd: 1_000 });
    assert.ok(r && !('waitFor' in r));
    b.progress(r, 5_000);
    b.priced(r, 1);
    b.settle(r, 1);
    assert.equal(b.spentMicroUsd, 5_000);
    assert.equal(b.exceeded, true);
    assert.equal(b.estimate('e/m', null), 5_000, "the forged cost does not lower the next attempt's estimate either");
  });

  it("a worker that names an unpriced (or cheaper) model in a forged assistant line still has its engine's streamed tokens priced at the model its session named", () => {
    // With no model set for the task, a step is priced by the model its log names last. The worker's tool writes an
    // assistant message naming a model the catalog does not have into its CLI's stdout, again after each real one:
    // every reading then had no price, and the budget never saw the session's spend while it ran.
    const home = tempDir();
    const priced = (id: string, prompt: string) => ({ id, name: id, context_length: 200_000, pricing: { prompt, completion: '0.000015' } });
    fs.writeFileSync(
      snapshotPath(home),
      JSON.stringify({
        fetched_at: new Date().toISOString(),
        source: snapshotPath(home),
        data: [priced('anthropic/claude-sonnet-4-5', '0.000003'), priced('cheap/tiny', '0.00000001')],
      }),
    );
    const claude = builtinEngines().get('claude');
    assert.ok(claude?.streamUsage);
    const lines = engineFixture('claude').split('\n');
    const streamed = lines.filter((l) => !l.includes('"type":"result"')).join('\n');
    const assistant = (id: string, model: string, input: number) =>
      JSON.stringify({
        type: 'assistant',
        message: { id, type: 'message', role: 'assistant', model, content: [{ type: 'text', text: 'x' }], usage: { input_tokens: input, output_tokens: 10 } },
      });
    for (const forgedModel of ['not-in-the-catalog', 'cheap/tiny']) {
      const spend = new RunSpend(home, 0.2, null);
      const hold = spend.admit({ name: 'claude' }, null, { key: 'a', taskType: 'test' });
      assert.ok(typeof hold !== 'string' && !('waitFor' in hold));
      spend.progress('a', claude.streamUsage(streamed), null, claude);
      const first = spend.snapshot().spentMicroUsd;
      assert.ok(first > 0, `the session's first messages are priced: ${first}`);
      // A real message of 100,000 input tokens ($0.30 at the session's price), then the forged one.
      const later = `${streamed}\n${assistant('msg_real2', 'claude-sonnet-4-5', 100_000)}\n${assistant('msg_forged', forgedModel, 1)}\n`;
      spend.progress('a', claude.streamUsage(later), null, claude);
      assert.ok(
        spend.snapshot().spentMicroUsd >= 300_000,
        `${forgedModel}: the 100,000 tokens count at the session's price: ${spend.snapshot().spentMicroUsd}`,
      );
      assert.notEqual(spend.overBudget(), null, `${forgedModel}: past the $0.20 budget`);
      spend.settle(hold, null, null);
    }
  });

  it("streamUsage: a final event the worker writes into its engine's output early does not freeze the reading while the session goes on", () => {
    const engines = builtinEngines();
    // opencode: a step that "ended the loop" (reason stop) written by the worker's tool, then the real loop's next
    // model call of 100,000 input tokens and $0.50.
    const step = (reason: string, input: number, cost: number) =>
      JSON.stringify({
        type: 'step_finish',
        part: { reason, type: 'step-finish', tokens: { input, output: 10, reasoning: 0, cache: { write: 0, read: 0 } }, cost },
      });
    const opencode = [step('tool-calls', 1_000, 0.01), step('stop', 1, 0), step('tool-calls', 100_000, 0.5)].join('\n');
    const o = engines.get('opencode')?.streamUsage?.(opencode);
    assert.ok((o?.tokensIn ?? 0) >= 101_000, `opencode: ${o?.tokensIn}`);
    assert.ok((o?.costMicroUsd ?? 0) >= 510_000, `opencode: ${o?.costMicroUsd}`);
    assert.equal(engines.get('opencode')?.parseOutput(opencode).finalStatus, 'success', 'parseOutput still ends at the step that ended the loop');
    // claude: a small result written early, then a real assistant message of 100,000 input tokens.
    const lines = engineFixture('claude').split('\n');
    const result = JSON.parse(lines.find((l) => l.includes('"type":"result"')) ?? '') as Record<string, unknown>;
    const forged = {
      ...result,
      total_cost_usd: 0.000001,
      usage: { input_tokens: 1, output_tokens: 1 },
      modelUsage: { m: { inputTokens: 1, outputTokens: 1 } },
    };
    const big = JSON.stringify({
      type: 'assistant',
      message: { id: 'msg_big', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 100_000, output_tokens: 10 } },
    });
    const claudeLog = [lines[0], JSON.stringify(forged), big].join('\n');
    const c = engines.get('claude')?.streamUsage?.(claudeLog);
    assert.ok((c?.tokensIn ?? 0) >= 100_000, `claude: ${c?.tokensIn}`);
    assert.equal(c?.costMicroUsd, null, "the forged result's cost is not taken: the catalog prices the tokens");
  });

  it('streamUsage: claude sums its assistant messages (the last per id) until its result; opencode sums its steps so far; codex reports only at its end', () => {
    const engines = builtinEngines();
    const claude = engineFixture('claude');
    const beforeResult = claude
      .split('\n')
      .filter((l) => !l.includes('"type":"result"'))
      .join('\n');
    const running = engines.get('claude')?.streamUsage?.(beforeResult);
    assert.deepEqual([running?.tokensIn, running?.tokensCached, running?.tokensOut, running?.costMicroUsd], [2468, 400, 2, null]);
    assert.equal(engines.get('claude')?.streamUsage?.(claude).costMicroUsd, 8154, 'with its result: the result');
    const opencode = engineFixture('opencode').split('\n');
    const firstStep = opencode.slice(0, opencode.findIndex((l) => l.includes('"step_finish"')) + 1).join('\n');
    assert.equal(engines.get('opencode')?.streamUsage?.(firstStep).tokensIn, 1234);
    assert.equal(engines.get('codex')?.streamUsage, undefined);
  });
});

describe('readers under a budget: an engine nothing prices runs one step at a time, readers included', () => {
  const engine = { name: 'e' };
  const task = (key: string) => ({ key, taskType: 'test' });
  /** Whether `p` has settled after the pending microtasks ran. */
  const settled = async (p: Promise<unknown>) => {
    let done = false;
    void p.then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    return done;
  };

  it('a second reader waits (with one note) while the first runs unpriced, then reserves what the first cost; an abort ends its wait', async () => {
    const spend = new RunSpend(tempDir(), 0.01, null);
    const notes: string[] = [];
    const say = (n: string) => notes.push(n);
    const first = await spend.admitReader(engine, 'm', task('a'), REVIEWER, new AbortController().signal, say);
    assert.ok(first && typeof first !== 'string' && first.usd?.unpriced, 'the first reader of an engine nothing prices starts, unpriced');
    const second = spend.admitReader(engine, 'm', task('b'), REVIEWER, new AbortController().signal, say);
    assert.equal(await settled(second), false, 'a second reader of the same engine and model waits: before, it started at $0');
    const stop = new AbortController();
    const third = spend.admitReader(engine, 'm', task('c'), { step: 'critique', who: 'a critic' }, stop.signal, say);
    assert.equal(notes.length, 1, notes.join('\n'));
    assert.match(notes[0] ?? '', /the cost of a reviewer on e \(m\) is unknown .*run one at a time until one has finished and priced it/);
    stop.abort();
    assert.equal(await third, null, 'stopped while it waited');
    spend.settle(first, 4_000, null);
    const got = (await second) as SpendHold;
    assert.equal(got.usd?.microUsd, 4_000, 'reserved what the first reader cost');
    assert.equal(
      await spend.admitReader(engine, 'm', task('d'), { step: 'rank', who: 'a ranking reviewer' }, new AbortController().signal, say),
      'budget: $0.0040 spent and $0.0040 held by running attempts, and this attempt may cost up to $0.0040: that would pass budget_usd $0.01; the attempt was not started',
    );
  });

  it("a reviewer on its own worker's unpriced engine starts once that worker has exited (never waits for its own attempt), at the worker's cost", async () => {
    const spend = new RunSpend(tempDir(), 0.01, null);
    const worker = spend.admit(engine, 'm', task('a'));
    assert.ok(typeof worker !== 'string' && !('waitFor' in worker) && worker.usd?.unpriced);
    const reviewer = spend.admitReader(engine, 'm', task('a'), REVIEWER, new AbortController().signal, () => undefined);
    assert.equal(await settled(reviewer), false, 'waits while the worker runs');
    spend.workerEnded('a', 3_000, 1_050);
    const got = (await reviewer) as SpendHold;
    assert.equal(got.usd?.microUsd, 3_000, "reserved the worker's cost");
    // Another task's attempt is priced too, while the first attempt (its check, its review) still holds its reservation.
    const next = spend.admit(engine, 'm', task('b'));
    assert.ok(typeof next !== 'string' && !('waitFor' in next));
    assert.equal(next.usd?.microUsd, 3_000);
    spend.settle(worker, 3_000, 1_050);
    assert.equal(spend.snapshot().spentMicroUsd, 3_000, "the worker's cost is charged once");
  });

  it("a running reader's streamed usage counts as it arrives: past the run's cap onOver stops it, and its task's attempt is no longer exempt once its worker exited", async () => {
    const spend = new RunSpend(tempDir(), 0.005, null);
    const over: [string | null, string][] = [];
    spend.onOver = (key, reason) => over.push([key, reason]);
    const usage = (usd: number) => ({ ...emptyUsage(), costMicroUsd: Math.round(usd * 1_000_000) });
    const capped = { name: 'e', maxAttemptMicroUsd: 1_000 };
    const worker = spend.admit(capped, 'm', task('a'));
    assert.ok(typeof worker !== 'string' && !('waitFor' in worker));
    spend.workerEnded('a', 1_000, null);
    assert.equal(spend.spendingOver('a'), true, 'its worker exited and nothing of it runs: the attempt spends nothing more');
    const reviewer = (await spend.admitReader(capped, 'm', task('a'), REVIEWER, new AbortController().signal, () => undefined)) as SpendHold;
    assert.equal(spend.readersRunning('a'), true);
    assert.equal(spend.spendingOver('a'), false, 'its reviewer spends: the attempt is stopped with it');
    spend.readerProgress(reviewer, usage(0.003), 'm', capped);
    assert.equal(spend.snapshot().spentMicroUsd, 4_000, "the reviewer's $0.003 so far counts live, beside the worker's $0.001");
    assert.deepEqual(over, []);
    spend.readerProgress(reviewer, usage(0.0045), 'm', capped);
    assert.equal(over.length, 1, 'once spent passes the budget');
    assert.equal(over[0]?.[0], null);
    assert.match(over[0]?.[1] ?? '', /^budget: \$0\.0055 spent passed budget_usd \$0\.0050; this attempt was stopped/);
    spend.settle(reviewer, 4_600, null);
    assert.equal(spend.readersRunning('a'), false);
    spend.readerProgress(reviewer, usage(0.01), 'm', capped);
    assert.equal(spend.snapshot().spentMicroUsd, 5_600, 'a settled reader reports nothing more');
  });

  it("a ranking reviewer's streamed usage passing its group's own budget_usd tells onOver the group's key", async () => {
    const spend = new RunSpend(tempDir(), null, null);
    const over: (string | null)[] = [];
    spend.onOver = (key) => over.push(key);
    const ranker = (await spend.admitReader(
      { name: 'e', maxAttemptMicroUsd: 500 },
      'm',
      { ...task('g'), budgetUsd: 0.002 },
      { step: 'rank', who: 'a ranking reviewer' },
      new AbortController().signal,
      () => undefined,
    )) as SpendHold;
    spend.readerProgress(ranker, { ...emptyUsage(), costMicroUsd: 2_500 }, 'm');
    assert.deepEqual(over, ['g']);
    assert.match(spend.taskOverBudget('g') ?? '', /task g's \$0\.0025 spent passed its budget_usd \$0\.0020/);
  });
});

describe('run spend: held-back attempts, best-of-N envelopes, a crash, a resume', () => {
  const stream = { name: 'oc', harness: 'opencode' } as const;
  it('under budget_tokens, an attempt held back behind an unbounded one wakes nobody (three tasks spun the orchestrator at 100 % CPU)', () => {
    const spend = new RunSpend(tempDir(), null, null, { budgetTokens: 100_000 });
    let freed = 0;
    spend.onFreed = () => freed++;
    const first = spend.admit(stream, 'm', { key: 'a', taskType: 'test' });
    assert.ok(typeof first === 'object' && !('waitFor' in first));
    for (const k of ['b', 'c']) {
      const held = spend.admit(stream, 'm', { key: k, taskType: 'test' });
      assert.ok(typeof held === 'object' && 'waitFor' in held, k);
    }
    assert.equal(freed, 0, 'a plain USD reservation released: nobody waited for it');
    spend.settle(first, null, 1_000);
    assert.equal(freed, 1, 'the unbounded attempt settled: the held-back ones ask again');
  });

  it("a best-of-N task's budget_usd is one envelope for all its candidates (each had its own: 3.2× the task's budget spent)", () => {
    const spend = new RunSpend(tempDir(), null, null);
    const candidate = (n: number) => ({ key: `t--c${n}`, taskType: 'test', budgetUsd: 0.01, maxAttemptUsd: 0.004, group: 't', candidate: n });
    const holds = [1, 2].map((n) => spend.admit(stream, 'm', candidate(n)));
    assert.ok(holds.every((h) => typeof h === 'object' && !('waitFor' in h)));
    assert.match(String(spend.admit(stream, 'm', candidate(3))), /task t has \$0\.00 spent and \$0\.0080 held by its running attempts.*budget_usd \$0\.01/);
    let over: string | null = null;
    spend.onOver = (key) => (over = key);
    spend.progress('t--c1', { ...emptyUsage(), costMicroUsd: 6_000, tokensIn: 10, tokensOut: 1 }, 'm');
    spend.progress('t--c2', { ...emptyUsage(), costMicroUsd: 5_000, tokensIn: 10, tokensOut: 1 }, 'm');
    assert.equal(over, 't', "the group's envelope is passed: its key is told");
  });

  it('a final report counting far fewer tokens than the session streamed is not believed: its small cost neither prices the engine nor passes for the spend; a little fewer is', () => {
    const spend = new RunSpend(tempDir(), 0.01, null);
    const claude = { name: 'cl', harness: 'claude' } as const;
    const hold = spend.admit(claude, 'unpriced', { key: 'a', taskType: 'test' });
    assert.ok(typeof hold === 'object' && !('waitFor' in hold));
    spend.progress('a', { ...emptyUsage(), tokensIn: 400_000, tokensOut: 20_000 }, 'unpriced');
    // The worker printed a result of 1 µUSD and 1 + 1 tokens, then killed its engine.
    spend.workerEnded('a', 1, 2);
    spend.settle(hold, 1, 2);
    assert.match(String(spend.admit(claude, 'unpriced', { key: 'b', taskType: 'test' })), /the cost of cl \(unpriced\) stays unknown/);
    // An honest session woken for a second turn after its result streams a little more than the result counts: its
    // cost is believed, charged, and prices the engine (it was dropped, and the engine's other tasks refused).
    const honest = new RunSpend(tempDir(), 2, null);
    const first = honest.admit(claude, 'unpriced', { key: 'a', taskType: 'test' });
    assert.ok(typeof first === 'object' && !('waitFor' in first));
    honest.progress('a', { ...emptyUsage(), tokensIn: 411_010, tokensOut: 10_000 }, 'unpriced');
    honest.workerEnded('a', 500_000, 420_000);
    honest.settle(first, 500_000, 420_000);
    assert.equal(honest.snapshot().spentMicroUsd, 500_000);
    const next = honest.admit(claude, 'unpriced', { key: 'b', taskType: 'test' });
    assert.ok(typeof next === 'object' && !('waitFor' in next) && next.usd?.microUsd === 500_000, JSON.stringify(next));
  });

  it("an engine's max_attempt_tokens is what budget_tokens reserves when the task and the eval log say nothing; the task's comes first", () => {
    const spend = new RunSpend(tempDir(), null, null, { budgetTokens: 12_000 });
    const engine = { name: 'oc', harness: 'opencode', maxAttemptTokens: 5_000 } as const;
    const two = ['a', 'b'].map((k) => spend.admit(engine, 'm', { key: k, taskType: 'test' }));
    assert.ok(
      two.every((h) => typeof h === 'object' && !('waitFor' in h)),
      'bounded: side by side, not one at a time',
    );
    assert.match(String(spend.admit(engine, 'm', { key: 'c', taskType: 'test' })), /may cost up to 5,000 tokens: that would pass budget_tokens 12,000 tokens/);
    const own = spend.admit(engine, 'm', { key: 'd', taskType: 'test', maxAttemptTokens: 1_000 });
    assert.ok(typeof own === 'object' && !('waitFor' in own), "the task's own 1,000 fits where the engine's 5,000 does not");
  });

  it('the spend state keeps what running attempts reported per envelope, and the keys nothing could count, for a resume after a crash', () => {
    const spend = new RunSpend(tempDir(), 0.05, null);
    const hold = spend.admit(stream, 'm', { key: 't', taskType: 'test', budgetUsd: 0.02, maxAttemptUsd: 0.01 });
    assert.ok(typeof hold === 'object' && !('waitFor' in hold));
    spend.progress('t', { ...emptyUsage(), costMicroUsd: 9_000, tokensIn: 10, tokensOut: 1 }, 'm');
    const cx = spend.admit({ name: 'cx', harness: 'codex' }, null, { key: 'u', taskType: 'test' });
    assert.ok(typeof cx === 'object' && !('waitFor' in cx));
    spend.settle(cx, null, null);
    const state = spend.snapshot();
    assert.deepEqual(state.byTask?.t, { usd: 9_000, tokens: 11 }, "the running attempt's reported spend (it was 0 before: a crash lost it)");
    assert.deepEqual(state.uncounted, { usd: ['cx/'], tokens: [] }, 'no budget_tokens: tokens are not capped');
    // The orchestrator dies here; the resumed run's spend starts from the state.
    const resumed = new RunSpend(tempDir(), 0.05, null);
    resumed.seed(priorSpend({ spend: state, tasks: [] }));
    assert.match(String(resumed.admit(stream, 'm', { key: 't', taskType: 'test', budgetUsd: 0.02, maxAttemptUsd: 0.012 })), /task t has \$0\.0090 spent/);
    assert.match(String(resumed.admit({ name: 'cx', harness: 'codex' }, null, { key: 'u', taskType: 'test' })), /the cost of cx stays unknown/);
  });
});

describe('usage meter: a log cut to its log_max_mb keeps the spend of its cut part', () => {
  it('the readings after a compaction add what the cut part reported; cutPart() is what the log no longer holds', async () => {
    const { usageMeter } = await import('../../extension/core/run/usage-meter');
    const step = (usd: number) => `{"type":"step_finish","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":10,"output":1},"cost":${usd}}}\n`;
    let log = step(0.001) + step(0.001);
    const seen: (number | null)[] = [];
    const { parseOpencodeOutput } = await import('../../engines/opencode');
    const meter = usageMeter(
      { streamUsage: parseOpencodeOutput },
      { read: (upTo) => Buffer.from(log).subarray(0, upTo).toString(), size: () => Buffer.byteLength(log) },
      (u) => seen.push(u.costMicroUsd),
    );
    meter.compaction.before();
    const seenBytes = Buffer.byteLength(log);
    log = 'head\n[verdict] cut\n'; // the two calls were in the cut middle
    meter.compaction.after({ seen: seenBytes, end: Buffer.byteLength(log) });
    log += step(0.001);
    meter.onOutput();
    meter.stop();
    assert.deepEqual(seen, [2000, 3000]);
    assert.deepEqual(meter.cutPart(), { tokensIn: 20, tokensOut: 2, costMicroUsd: 2000 });
    const { withCutPart } = await import('../../extension/core/run/usage-meter');
    const final = withCutPart(parseOpencodeOutput(log), meter.cutPart());
    assert.deepEqual([final.costMicroUsd, final.tokensIn, final.tokensOut], [3000, 30, 3]);
  });

  it('a model call written after the cut but before the reading after it is not taken for what the cut kept', async () => {
    const { usageMeter, withCutPart } = await import('../../extension/core/run/usage-meter');
    const { parseOpencodeOutput } = await import('../../engines/opencode');
    const step = (usd: number) => `{"type":"step_finish","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":10,"output":1},"cost":${usd}}}\n`;
    const flood = 'x'.repeat(100) + '\n';
    let log = 'head\n' + step(0.001).repeat(8) + flood.repeat(3);
    const reported: (number | null)[] = [];
    const meter = usageMeter(
      { streamUsage: parseOpencodeOutput },
      { read: (upTo) => Buffer.from(log).subarray(0, upTo).toString(), size: () => Buffer.byteLength(log) },
      (u) => reported.push(u.costMicroUsd),
    );
    meter.compaction.before();
    // Mid-compaction the log holds the kept tail twice (moved down, not yet truncated): a reading would count it twice.
    log += step(0.001).repeat(2);
    meter.onOutput();
    log = log.slice(0, -2 * step(0.001).length);
    // The compaction looked once more (a line of flood more), kept the head and the last two lines, truncated; then,
    // before its reading after, the step wrote its last call (under load: the orchestrator was descheduled meanwhile).
    log += flood;
    const seen = Buffer.byteLength(log);
    log = 'head\n[verdict] cut\n' + flood.repeat(2);
    const end = Buffer.byteLength(log);
    log += step(0.001);
    meter.compaction.after({ seen, end });
    meter.stop();
    assert.deepEqual(meter.cutPart(), { tokensIn: 80, tokensOut: 8, costMicroUsd: 8000 }, 'before, 7000: the last call was subtracted from the cut part');
    assert.deepEqual(reported, [9000], 'output handed on during the compaction (its tail, half moved down) is not read: the reading after reports');
    assert.equal(withCutPart(parseOpencodeOutput(log), meter.cutPart()).costMicroUsd, 9000);
  });
});
