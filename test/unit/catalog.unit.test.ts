import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { refreshCatalog, refreshInBackground } from '../../extension/core/catalog/refresh';
import { readChanges, readSnapshot, snapshotPath } from '../../extension/core/catalog/snapshot';
import { Budget, type Reservation } from '../../extension/core/cost/budget';
import { attemptCostMicroUsd, priceOf, type PricedUsage } from '../../extension/core/cost/pricing';
import { microUsdPerToken, parseCatalog } from '../../extension/core/catalog/openrouter';
import { tempDir } from '../helpers/fixtures';

const FIXTURES = path.resolve('test/fixtures/scoreboard');

/** Serves `body()` on 127.0.0.1; counts requests. */
async function serve(body: () => string): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const srv = http.createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(body());
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/api/v1/models`, hits: () => hits, close: () => new Promise((r) => srv.close(() => r())) };
}

describe('catalog (unit)', () => {
  it('records added, removed, price_change, went_free and went_paid across two snapshots', async () => {
    const home = tempDir();
    let file = 'catalog-a.json';
    const server = await serve(() => fs.readFileSync(path.join(FIXTURES, file), 'utf8'));
    try {
      const first = await refreshCatalog(home, server.url, new Date('2026-01-01T00:00:00Z'));
      assert.deepEqual([first.models, first.changes], [6, []]);
      file = 'catalog-b.json';
      const second = await refreshCatalog(home, server.url, new Date('2026-01-02T00:00:00Z'));
      const expected = [
        ['price_change', 'cheap/two'],
        ['went_paid', 'free/one'],
        ['added', 'new/four'],
        ['went_free', 'pricey/three'],
        ['removed', 'small/ctx'],
      ];
      assert.deepEqual(
        second.changes.map((c) => [c.kind, c.id]),
        expected,
      );
      assert.deepEqual(
        readChanges(home).map((c) => [c.kind, c.id]),
        expected,
      );
      assert.deepEqual(readChanges(home)[0], {
        at: '2026-01-02T00:00:00.000Z',
        kind: 'price_change',
        id: 'cheap/two',
        old: { prompt: '0.0000001', completion: '0.0000002' },
        new: { prompt: '0.0000002', completion: '0.0000002' },
      });
      assert.equal(readSnapshot(home)?.source, server.url);
      assert.equal(server.hits(), 2);
    } finally {
      await server.close();
    }
  });

  it('refuses a catalog of the wrong shape, naming the field, and keeps the previous snapshot', async () => {
    const home = tempDir();
    await refreshCatalog(home, path.join(FIXTURES, 'catalog-a.json'));
    const before = fs.readFileSync(snapshotPath(home), 'utf8');
    const bad = path.join(home, 'bad.json');
    fs.writeFileSync(bad, JSON.stringify({ data: [{ id: 'x/y', context_length: 1000, pricing: { prompt: 0.1, completion: '0' } }] }));
    await assert.rejects(refreshCatalog(home, bad), /bad\.json: data\[0\]\.pricing\.prompt: must be a decimal string/);
    fs.writeFileSync(bad, JSON.stringify([{ id: 'x' }]));
    await assert.rejects(refreshCatalog(home, bad), /\(top level\): must be a JSON object/);
    fs.writeFileSync(bad, '{"data": [');
    await assert.rejects(refreshCatalog(home, bad), /not JSON/);
    assert.equal(fs.readFileSync(snapshotPath(home), 'utf8'), before);
    assert.deepEqual(readChanges(home), []);
  });

  it("refreshes in the background at most once in 24 h, only from a snapshot's source, never throwing", async () => {
    const home = tempDir();
    assert.equal(await refreshInBackground(home), 'no-snapshot');
    const server = await serve(() => fs.readFileSync(path.join(FIXTURES, 'catalog-b.json'), 'utf8'));
    try {
      await refreshCatalog(home, server.url, new Date('2026-01-01T00:00:00Z'));
      assert.equal(await refreshInBackground(home, undefined, new Date('2026-01-01T23:00:00Z')), 'fresh');
      assert.equal(server.hits(), 1);
      assert.equal(await refreshInBackground(home, undefined, new Date('2026-01-02T01:00:00Z')), 'refreshed');
      assert.equal(server.hits(), 2);
    } finally {
      await server.close();
    }
    assert.match(await refreshInBackground(home, undefined, new Date('2026-01-04T00:00:00Z')), /^failed: /);
    assert.equal(readSnapshot(home)?.fetched_at, '2026-01-02T01:00:00.000Z', 'a failed refresh keeps the snapshot');
  });
});

describe('cost and budget (unit)', () => {
  const catalog = parseCatalog(JSON.parse(fs.readFileSync(path.join(FIXTURES, 'catalog-a.json'), 'utf8')), 'catalog-a.json');

  it("takes the CLI's cost, else tokens × catalog price, else null", () => {
    const alpha = priceOf(catalog, 'alpha');
    assert.equal(alpha?.id, 'lab/alpha', 'a bare id finds its lab/ id');
    const u = (costMicroUsd: number | null, tokensIn: number | null, tokensOut: number | null, parts: Partial<PricedUsage> = {}): PricedUsage => ({
      costMicroUsd,
      tokensIn,
      tokensOut,
      ...parts,
    });
    assert.equal(attemptCostMicroUsd(u(1234, 1000, 1000), alpha), 1234);
    // 1000 × $3/Mtok + 2000 × $15/Mtok = 3000 + 30000 micro-USD
    assert.equal(attemptCostMicroUsd(u(null, 1000, 2000), alpha), 33000);
    assert.equal(attemptCostMicroUsd(u(null, null, 2000), alpha), null);
    assert.equal(attemptCostMicroUsd(u(null, 1000, 2000), priceOf(catalog, 'unknown/model')), null);
    // Cached input priced apart where the catalog gives input_cache_read (and the engine reports cached as part of input).
    const cache = { ...(alpha as NonNullable<typeof alpha>), cacheReadMicroUsd: 0.3 };
    assert.equal(attemptCostMicroUsd(u(null, 1000, 2000, { cachedInInput: 800 }), cache), 200 * 3 + 800 * 0.3 + 2000 * 15);
    assert.equal(
      attemptCostMicroUsd(u(null, 1000, 2000, { cachedInInput: null }), cache),
      33000,
      'cached not known to be part of input: all at the prompt price',
    );
    assert.equal(attemptCostMicroUsd(u(null, 1000, 2000, { cachedInInput: 800 }), alpha), 33000, 'no cache price in the catalog: all at the prompt price');
    assert.equal(
      attemptCostMicroUsd(u(null, 1000, 2000, { cachedInInput: 5000 }), cache),
      33000,
      'a cached count above the input (a forged line) is not believed',
    );
  });

  it('prices cache writes and reasoning apart where the catalog gives input_cache_write and internal_reasoning', () => {
    const m = (pricing: Record<string, string>) => ({ id: 'lab/p', context_length: 1000, pricing: { prompt: '0.000003', completion: '0.000015', ...pricing } });
    const full = priceOf([m({ input_cache_read: '0.0000003', input_cache_write: '0.00000375', internal_reasoning: '0.00002' })], 'lab/p');
    assert.deepEqual([full?.cacheReadMicroUsd, full?.cacheWriteMicroUsd, full?.reasoningMicroUsd], [0.3, 3.75, 20]);
    const usage: PricedUsage = {
      costMicroUsd: null,
      tokensIn: 10_000,
      tokensOut: 3_000,
      cachedInInput: 6_000,
      cacheWriteInInput: 1_000,
      reasoningInOutput: 2_000,
    };
    // 3,000 fresh × 3 + 6,000 read × 0.3 + 1,000 written × 3.75 + 1,000 output × 15 + 2,000 reasoning × 20
    assert.equal(attemptCostMicroUsd(usage, full), 9_000 + 1_800 + 3_750 + 15_000 + 40_000);
    // Without those prices (or priced 0: not a free write or free thinking) each part is priced with the rest.
    const plain = priceOf([m({ input_cache_read: '0.0000003', input_cache_write: '0', internal_reasoning: '0' })], 'lab/p');
    assert.deepEqual([plain?.cacheWriteMicroUsd, plain?.reasoningMicroUsd], [null, null]);
    assert.equal(attemptCostMicroUsd(usage, plain), 4_000 * 3 + 1_800 + 3_000 * 15);
    // Counts larger than what they are part of (a forged line) are not believed; writes are a part of what is not read.
    assert.equal(attemptCostMicroUsd({ ...usage, cacheWriteInInput: 5_000, reasoningInOutput: 4_000 }, full), 4_000 * 3 + 1_800 + 3_000 * 15);
    assert.equal(attemptCostMicroUsd({ ...usage, cacheWriteInInput: -5, reasoningInOutput: null }, full), 4_000 * 3 + 1_800 + 3_000 * 15);
  });

  it('does not start an attempt whose worst case would pass the cap; unknown cost is charged its reservation', () => {
    const b = new Budget(1_000_000);
    const r1 = b.reserve('e/m', null) as Reservation;
    assert.deepEqual(r1, { key: 'e/m', microUsd: 0, unpriced: true, task: null, liveMicroUsd: 0 });
    b.settle(r1, 400_000);
    const r2 = b.reserve('e/m', null) as Reservation;
    assert.equal(r2.microUsd, 400_000, 'the most an attempt of this model cost');
    assert.equal(b.reserve('e/m', null), null, '400k spent + 400k held + 400k > 1M');
    b.settle(r2, null);
    assert.equal(b.spentMicroUsd, 800_000);
    assert.equal(b.reserve('e/m', null), null);
    assert.match(b.refusal('e/m', null), /\$0\.80 spent.*up to \$0\.40.*budget_usd \$1\.00/);
    const priced = new Budget(1_000_000);
    // lab/alpha: 200k context × $3/Mtok + 20k × $15/Mtok = 0.6 + 0.3 USD
    assert.equal(priced.estimate('codex/lab/alpha', priceOf(catalog, 'lab/alpha')), 900_000);
    assert.equal((new Budget(null).reserve('x', priceOf(catalog, 'lab/alpha')) as Reservation).microUsd, 900_000);
  });

  it('an attempt of unknown price under a cap runs alone on its engine/model until one is priced', () => {
    const b = new Budget(5_000);
    const first = b.reserve('e/m', null) as Reservation;
    assert.equal(first.unpriced, true);
    assert.deepEqual(b.reserve('e/m', null), { waitFor: 'e/m' }, 'a second parallel attempt waits: its cost is unbounded');
    assert.deepEqual(b.reserve('e/other', null), { key: 'e/other', microUsd: 0, unpriced: true, task: null, liveMicroUsd: 0 }, 'another model is its own key');
    assert.deepEqual(b.reserve('e/m', null, false), { key: 'e/m', microUsd: 0, task: null, liveMicroUsd: 0 }, 'a step that cannot wait starts');
    b.settle(first, 12_000);
    assert.equal(b.reserve('e/m', null), null, 'priced at 12k, past the 5k cap: refused, not started');
    const noCap = new Budget(null);
    noCap.reserve('e/m', null);
    assert.deepEqual(noCap.reserve('e/m', null), { key: 'e/m', microUsd: 0, task: null, liveMicroUsd: 0 }, 'without a cap nothing waits');
    const unknown = new Budget(1_000_000);
    const u1 = unknown.reserve('e/m', null) as Reservation;
    unknown.settle(u1, null);
    assert.equal((unknown.reserve('e/m', null) as Reservation).unpriced, true, 'a cost that stayed unknown priced nothing');
    assert.deepEqual(unknown.reserve('e/m', null), { waitFor: 'e/m' });
  });

  it('prices per token read as the catalog wrote them: no binary noise in micro-USD (USD per Mtok)', () => {
    assert.deepEqual(['0.0000002', '0.0000003', '0.000015', '0.00000007', '0', '-1', 'x'].map(microUsdPerToken), [0.2, 0.3, 15, 0.07, 0, null, null]);
  });
});
