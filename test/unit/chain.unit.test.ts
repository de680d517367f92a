import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { appendEvalRow } from '../../extension/core/store/eval-log';
import { canonicalJson, chainHeadPath, readChainHeads, rowHash } from '../../extension/core/store/chain';
import { verifyEvalLog } from '../../extension/core/store/verify-log';
import { EvalIndex } from '../../extension/core/store/sqlite-index';
import { verifyLogCommand } from '../../extension/cli/verify-log-command';
import { InputError } from '../../extension/cli/io';
import { sampleRow, tempDir } from '../helpers/fixtures';

/** A fresh home with `n` rows of host `h` (task keys t1…tn). */
async function logWith(n: number, host = 'h'): Promise<string> {
  const log = path.join(tempDir(), 'runs.jsonl');
  for (let i = 1; i <= n; i++) await appendEvalRow(log, sampleRow({ run_id: 'run1', task_key: `t${i}`, host }));
  return log;
}

function lines(log: string): string[] {
  return fs.readFileSync(log, 'utf8').slice(0, -1).split('\n');
}

function writeLines(log: string, ls: string[]): void {
  fs.writeFileSync(log, ls.join('\n') + '\n');
}

function collector() {
  const out: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => out.push(l) }, text: () => out.join('\n') };
}

/** Ringer's row: its columns only, no prev_hash, no host. */
function ringerRow(i: number): string {
  return JSON.stringify({
    run_id: 'ringer-run',
    task_key: `r${i}`,
    spec: 'do it',
    worker_engine: 'codex',
    verdict: i % 2 ? 'PASS' : 'FAIL',
    duration_ms: 1000,
    worker_tokens: 10,
    model: 'gpt-5',
    task_type: 'code',
    retry: false,
    identity: 'old',
    notes: '',
  });
}

describe('hash chain of the eval log', () => {
  it('canonical form: keys sorted at every depth, no whitespace, UTF-8; the hash is SHA-256 hex over it', () => {
    assert.equal(canonicalJson({ b: 1, a: [{ d: null, c: 'é' }], e: true }), '{"a":[{"c":"é","d":null}],"b":1,"e":true}');
    assert.equal(canonicalJson({ x: undefined, y: 'a"b' }), '{"y":"a\\"b"}');
    assert.equal(rowHash({ b: 1, a: 2 }), crypto.createHash('sha256').update(Buffer.from('{"a":2,"b":1}', 'utf8')).digest('hex'));
    assert.equal(rowHash({ a: 2, b: 1 }), rowHash({ b: 1, a: 2 }), 'key order does not matter (Postgres JSONB reorders)');
  });

  it('appendEvalRow links each row to the one before it and keeps the head beside the log', async () => {
    const log = await logWith(3);
    const rows = lines(log).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(rows[0]?.prev_hash, null);
    assert.equal(rows[1]?.prev_hash, rowHash(rows[0]));
    assert.equal(rows[2]?.prev_hash, rowHash(rows[1]));
    assert.equal(chainHeadPath(log), path.join(path.dirname(log), 'runs.chain.json'));
    const heads = readChainHeads(log);
    assert.deepEqual(heads?.chains, { h: { hash: rowHash(rows[2]), rows: 3 } });
    assert.equal(heads?.log_bytes, fs.statSync(log).size);
    const v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings));
    assert.deepEqual(v.heads, ['runs.chain.json']);
  });

  it('a prev_hash given by the caller is replaced', async () => {
    const log = path.join(tempDir(), 'runs.jsonl');
    const written = await appendEvalRow(log, sampleRow({ prev_hash: 'f'.repeat(64) }));
    assert.equal(written.prev_hash, null);
    assert.equal((JSON.parse(lines(log)[0] as string) as { prev_hash: unknown }).prev_hash, null);
  });

  it('verify-log: intact log exits 0', async () => {
    const log = await logWith(4);
    const c = collector();
    assert.equal(await verifyLogCommand({ log }, c.io), 0, c.text());
    assert.match(c.text(), /4 rows in 1 chain \(h: 4\)/);
    assert.match(c.text(), /intact/);
  });

  it('an edited row is named: its line, run_id/task_key and attempt', async () => {
    const log = await logWith(5);
    const ls = lines(log);
    ls[2] = (ls[2] as string).replace('"verdict":"PASS"', '"verdict":"FAIL"');
    writeLines(log, ls);
    const c = collector();
    assert.equal(await verifyLogCommand({ log }, c.io), 1);
    assert.match(c.text(), /TAMPERED: line 3 \(run1\/t3 attempt 1\) was edited, or rows between it and line 4/);
    const v = await verifyEvalLog(log);
    assert.equal(v.findings[0]?.kind, 'broken');
    assert.equal(v.findings[0]?.line, 3);
  });

  it('an edited last row shows against the head', async () => {
    const log = await logWith(3);
    const ls = lines(log);
    ls[2] = (ls[2] as string).replace('"notes":""', '"notes":"fine"');
    writeLines(log, ls);
    const v = await verifyEvalLog(log);
    assert.equal(v.intact, false);
    assert.equal(v.findings[0]?.kind, 'head-mismatch');
    assert.equal(v.findings[0]?.line, 3);
    assert.match(v.findings[0]?.message ?? '', /run1\/t3 attempt 1/);
  });

  it('a deleted row: the gap is named by the rows around it', async () => {
    const log = await logWith(5);
    const ls = lines(log);
    ls.splice(2, 1); // t3 gone
    writeLines(log, ls);
    const v = await verifyEvalLog(log);
    assert.equal(v.intact, false);
    const f = v.findings[0];
    assert.equal(f?.kind, 'broken');
    assert.equal(f?.line, 2);
    assert.equal(f?.next_line, 3);
    assert.match(f?.message ?? '', /rows between it and line 3 \(run1\/t4 attempt 1\) were removed/);
    assert.ok(
      v.findings.some((x) => x.kind === 'cut' || x.kind === 'shrunk'),
      'the head also sees one row fewer',
    );
  });

  it('reordered rows: the first row out of place is named', async () => {
    const log = await logWith(5);
    const ls = lines(log);
    [ls[1], ls[2]] = [ls[2] as string, ls[1] as string]; // t3 before t2
    writeLines(log, ls);
    const c = collector();
    assert.equal(await verifyLogCommand({ log }, c.io), 1);
    assert.match(c.text(), /TAMPERED: line 2 \(run1\/t3 attempt 1\) comes right after line 3 \(run1\/t2 attempt 1\).*reordered/);
  });

  it('rows cut from the end are noticed against the head file', async () => {
    const log = await logWith(5);
    writeLines(log, lines(log).slice(0, 3));
    const v = await verifyEvalLog(log);
    assert.equal(v.intact, false);
    const cut = v.findings.find((f) => f.kind === 'cut');
    assert.match(cut?.message ?? '', /records 5 rows for host h, the log has 3: 2 rows were cut from the end \(after line 3, run1\/t3 attempt 1\)/);
    assert.ok(v.findings.some((f) => f.kind === 'shrunk'));
    // The next append continues from the head, so the cut stays visible instead of being healed.
    await appendEvalRow(log, sampleRow({ run_id: 'run1', task_key: 't6' }));
    assert.equal((await verifyEvalLog(log)).intact, false);
  });

  it('a stripped prev_hash is named', async () => {
    const log = await logWith(3);
    const ls = lines(log);
    const row = JSON.parse(ls[1] as string) as Record<string, unknown>;
    delete row.prev_hash;
    ls[1] = JSON.stringify(row);
    writeLines(log, ls);
    const v = await verifyEvalLog(log);
    assert.equal(v.findings[0]?.kind, 'unchained');
    assert.equal(v.findings[0]?.line, 2);
  });

  it('a Ringer log without hashes loads everywhere and verifies; the chain starts where hashes start', async () => {
    const home = tempDir();
    const log = path.join(home, 'runs.jsonl');
    writeLines(log, [1, 2, 3].map(ringerRow));
    const c = collector();
    assert.equal(await verifyLogCommand({ log }, c.io), 0, c.text());
    assert.match(c.text(), /0 rows in 0 chains.*3 rows without hashes/);
    await appendEvalRow(log, sampleRow({ task_key: 'a' }));
    await appendEvalRow(log, sampleRow({ task_key: 'b' }));
    const rows = lines(log).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(rows[3]?.prev_hash, null, 'the first chained row starts the chain');
    assert.equal(rows[4]?.prev_hash, rowHash(rows[3]));
    const v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings));
    assert.equal(v.unchained, 3);
    const index = await EvalIndex.open(log, null);
    const u = index.update();
    assert.equal(u.added, 5);
    assert.equal(u.corrupt, 0);
  });

  it('two hosts interleaved in one log: one chain each; an edit names the row and its host', async () => {
    const log = path.join(tempDir(), 'runs.jsonl');
    for (let i = 1; i <= 4; i++) {
      await appendEvalRow(log, sampleRow({ run_id: 'ra', task_key: `a${i}`, host: 'alpha' }));
      await appendEvalRow(log, sampleRow({ run_id: 'rb', task_key: `b${i}`, host: 'beta' }));
    }
    const rows = lines(log).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(rows[1]?.prev_hash, null, "beta's first row starts beta's chain");
    assert.equal(rows[2]?.prev_hash, rowHash(rows[0]), "alpha's second row links to alpha's first, not to beta's");
    let v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings));
    assert.deepEqual(Object.fromEntries(Object.entries(v.chains).map(([h, c]) => [h, c.rows])), { alpha: 4, beta: 4 });
    const ls = lines(log);
    ls[3] = (ls[3] as string).replace('"duration_ms":10', '"duration_ms":11'); // beta's b2
    writeLines(log, ls);
    v = await verifyEvalLog(log);
    assert.equal(v.findings[0]?.line, 4);
    assert.equal(v.findings[0]?.host, 'beta');
    assert.match(v.findings[0]?.message ?? '', /rb\/b2 attempt 1/);
    assert.equal(v.findings.filter((f) => f.host === 'alpha').length, 0);
  });

  it('a head file behind the log (a crash before its update) is a note, not tampering; the next append catches up', async () => {
    const log = await logWith(2);
    const before = fs.readFileSync(chainHeadPath(log), 'utf8');
    await appendEvalRow(log, sampleRow({ run_id: 'run1', task_key: 't3' }));
    fs.writeFileSync(chainHeadPath(log), before); // as if the process died between the append and the head write
    let v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings));
    assert.match(v.notes.join('\n'), /1 rows behind host h's chain/);
    await appendEvalRow(log, sampleRow({ run_id: 'run1', task_key: 't4' }));
    v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings));
    assert.equal(readChainHeads(log)?.chains.h?.rows, 4);
  });

  it('without a head file the chain goes on from the log (and verify says cuts cannot be seen)', async () => {
    const log = await logWith(2);
    fs.rmSync(chainHeadPath(log));
    let v = await verifyEvalLog(log);
    assert.equal(v.intact, true);
    assert.match(v.notes.join('\n'), /cannot be noticed/);
    await appendEvalRow(log, sampleRow({ run_id: 'run1', task_key: 't3' }));
    v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings));
    assert.equal(readChainHeads(log)?.chains.h?.rows, 3);
  });

  it('bad input: a missing log is exit 2 (InputError)', async () => {
    await assert.rejects(
      verifyLogCommand({ log: path.join(tempDir(), 'nope.jsonl') }, collector().io),
      (e: unknown) => e instanceof InputError && /no eval log/.test((e as Error).message),
    );
  });
});
