import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { rowHash } from '../../extension/core/store/chain';
import { verifyEvalLog } from '../../extension/core/store/verify-log';
import { tempDir } from '../helpers/fixtures';

const WRITERS = path.resolve('test/fixtures/writers');

/** Starts `node --import=tsx <script> ...args` as its own OS process. */
function writer(script: string, args: string[]) {
  return execa('node', ['--import=tsx', path.join(WRITERS, script), ...args], { reject: false, all: true, stdin: 'ignore' });
}

describe('concurrent writers to one VERDICT_HOME', function () {
  this.timeout(240000);

  it('8 processes × 1,000 rows through appendEvalRow: 8,000 whole lines, each (writer, seq) once, chains intact', async () => {
    const log = path.join(tempDir(), 'home', 'runs.jsonl');
    // Writers 0-3 on host "h", 4-7 on host "h2": two chains interleaved in one log, each with 4 processes appending.
    const results = await Promise.all(Array.from({ length: 8 }, (_, w) => writer('append-rows.ts', [log, String(w), '1000', w < 4 ? 'h' : 'h2'])));
    for (const r of results) assert.equal(r.exitCode, 0, r.all);
    const text = fs.readFileSync(log, 'utf8');
    assert.ok(text.endsWith('\n'), 'the log ends with a whole line');
    const lines = text.slice(0, -1).split('\n');
    assert.equal(lines.length, 8000);
    const seen = new Set<string>();
    for (const [i, line] of lines.entries()) {
      let row: { run_id: string; task_key: string; spec: string };
      try {
        row = JSON.parse(line) as typeof row;
      } catch {
        assert.fail(`line ${i + 1} is not valid JSON (torn or interleaved): ${line.slice(0, 80)}…`);
      }
      assert.equal(row.spec.length, 5000, `line ${i + 1} lost bytes`);
      const id = `${row.run_id}/${row.task_key}`;
      assert.ok(!seen.has(id), `${id} written twice`);
      seen.add(id);
    }
    for (let w = 0; w < 8; w++) for (let s = 0; s < 1000; s++) assert.ok(seen.has(`writer-${w}/${s}`), `writer-${w}/${s} lost`);
    // The hash chains: every row links to the one before it of its host, and the heads match the log.
    const v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings.slice(0, 3)));
    assert.deepEqual(v.notes, []);
    assert.deepEqual(Object.fromEntries(Object.entries(v.chains).map(([h, c]) => [h, c.rows])), { h: 4000, h2: 4000 });
    const last = JSON.parse(lines[lines.length - 1] as string) as { host: string };
    assert.equal(v.chains[last.host]?.hash, rowHash(last));
  });

  it('StateFile saves from 4 processes × 3 instances on one state.json: no shared temp name, never a torn file', async () => {
    const dir = tempDir();
    const stateFile = path.join(dir, 'state.json');
    fs.writeFileSync(stateFile, JSON.stringify({ version: 1, runId: 'initial', tasks: [] }));
    const children = Array.from({ length: 4 }, (_, w) => writer('save-state.ts', [stateFile, String(w), '3', '100', path.join(dir, `names-${w}.txt`)]));
    // Read while they write: a reader must always see one writer's whole file.
    let reads = 0;
    let done = false;
    const all = Promise.all(children).finally(() => (done = true));
    while (!done) {
      const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { version: number; tasks: unknown[] };
      assert.equal(state.version, 1);
      reads++;
      await new Promise((r) => setImmediate(r));
    }
    for (const r of await all) {
      assert.equal(r.exitCode, 0, r.all);
      assert.doesNotMatch(r.all ?? '', /cannot write/);
    }
    const names = [0, 1, 2, 3].flatMap((w) =>
      fs
        .readFileSync(path.join(dir, `names-${w}.txt`), 'utf8')
        .split('\n')
        .filter(Boolean),
    );
    // Saves coalesce (one write in flight, one waiting), so each instance writes at least once and far fewer than 100 times.
    assert.ok(names.length >= 4 * 3 && names.length <= 4 * 3 * 100, `${names.length} temp files`);
    assert.equal(new Set(names).size, names.length, 'two saves shared a temp name');
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.startsWith('state.json.')),
      [],
      'no temp file left behind',
    );
    const final = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { version: number; runId: string; tasks: unknown[] };
    assert.match(final.runId, /^writer-\d-\d$/);
    assert.equal(final.tasks.length, 50);
    assert.ok(reads > 0);
  });
});
