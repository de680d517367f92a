import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

describe('verdict backfill (built CLI)', function () {
  this.timeout(180000);

  it("Ringer's runs.jsonl: task_type by run_id:task_key, then run_id, then the longest name:prefix; model from <runs-dir>/<run_id>.json; dry run writes nothing; the rest keeps its bytes", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const runsDir = path.join(dir, 'ringer-runs');
    fs.mkdirSync(runsDir);
    fs.writeFileSync(
      path.join(runsDir, 'docs-sweep-20260101-a1.json'),
      JSON.stringify({
        run_id: 'docs-sweep-20260101-a1',
        tasks: [
          { key: 'readme', model: 'glm-4.6' },
          { key: 'guide', model: '' },
        ],
      }),
    );
    const row = (o: Record<string, unknown>) =>
      JSON.stringify({ run_id: 'x', task_key: 't', attempt: 1, verdict: 'PASS', duration_ms: 10, worker_engine: 'opencode', ...o });
    const lines = [
      row({ run_id: 'docs-sweep-20260101-a1', task_key: 'readme', task_type: '' }),
      row({ run_id: 'docs-sweep-20260101-a1', task_key: 'guide' }),
      row({ run_id: 'fix-20260102-b2', task_key: 'one', model: 'kept-model' }),
      row({ run_id: 'other-20260103', task_key: 'z', task_type: 'already' }),
      'this line is not JSON',
      row({ run_id: 'nomatch-1', task_key: 'q' }),
    ];
    const log = path.join(dir, 'runs.jsonl');
    const original = lines.join('\n') + '\n';
    fs.writeFileSync(log, original);
    const mapping = path.join(dir, 'mapping.json');
    fs.writeFileSync(
      mapping,
      JSON.stringify({
        'docs-sweep-20260101-a1:readme': 'docs',
        'fix-20260102-b2': 'bugfix',
        'name:docs': 'writing',
        'name:docs-sweep': 'sweep',
        'name:other': 'never-used',
      }),
    );

    const dry = await cli(['backfill', '--log', log, '--runs-dir', runsDir, '--mapping', mapping, '--dry-run', '--home', home]);
    assert.equal(dry.exitCode, 0, dry.all);
    assert.match(dry.stdout, /line 1: docs-sweep-20260101-a1\/readme attempt 1: task_type → docs \(by "docs-sweep-20260101-a1:readme"\), model → glm-4\.6/);
    assert.match(dry.stdout, /line 2: docs-sweep-20260101-a1\/guide attempt 1: task_type → sweep \(by "name:docs-sweep"\)\n/);
    assert.match(dry.stdout, /line 3: fix-20260102-b2\/one attempt 1: task_type → bugfix \(by "fix-20260102-b2"\)\n/);
    assert.match(dry.stdout, /would change 3/);
    assert.equal(fs.readFileSync(log, 'utf8'), original, 'a dry run writes nothing');

    const real = await cli(['backfill', '--log', log, '--runs-dir', runsDir, '--mapping', mapping, '--home', home]);
    assert.equal(real.exitCode, 0, real.all);
    const after = fs.readFileSync(log, 'utf8').split('\n');
    const parsed = after.slice(0, 4).map((l) => JSON.parse(l));
    assert.deepEqual(
      parsed.map((r) => [r.task_type ?? null, r.model ?? null]),
      [
        ['docs', 'glm-4.6'],
        ['sweep', null],
        ['bugfix', 'kept-model'],
        ['already', null],
      ],
    );
    assert.deepEqual(after.slice(3, 7), [lines[3], lines[4], lines[5], ''], 'unmatched rows and the bad line keep their bytes');
    const backups = fs.readdirSync(dir).filter((f) => f.startsWith('runs.jsonl.before-backfill-'));
    assert.equal(backups.length, 1);
    assert.equal(fs.readFileSync(path.join(dir, backups[0]!), 'utf8'), original);
    const record = JSON.parse(fs.readFileSync(path.join(dir, 'backfills.jsonl'), 'utf8'));
    assert.equal(record.rows_changed, 3);

    const again = await cli(['backfill', '--log', log, '--runs-dir', runsDir, '--mapping', mapping, '--home', home]);
    assert.match(again.stdout, /changed 0/, 'idempotent');
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '["docs"]');
    const refused = await cli(['backfill', '--log', log, '--mapping', bad, '--home', home]);
    assert.equal(refused.exitCode, 2);
    assert.match(refused.stderr, /bad\.json: the mapping must be one JSON object/);
    const noMapping = await cli(['backfill', '--log', log, '--home', home]);
    assert.equal(noMapping.exitCode, 2);
  });

  it("Verdict's hash-chained log: the changed rows and every later row of their chain are rewritten, verify-log passes on the new log and the backup", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    const noType = (k: string) => {
      const t = scriptTask(k, `echo ${k} > ${k}.txt`, `test -s ${k}.txt || { echo missing; exit 1; }`);
      delete t.task_type;
      return t;
    };
    const manifest = writeManifest(repo, { run_name: 'legacy', tasks: [noType('a'), noType('b'), noType('c')], max_parallel: 1 });
    const run = await cli(['run', manifest, '--home', home, '--no-dashboard'], { env: { VERDICT_IDENTITY: 't' } });
    assert.equal(run.exitCode, 0, run.all);
    const rows = readRows(home);
    assert.equal(rows.length, 3);
    assert.ok(rows.every((r) => r.task_type === null && 'prev_hash' in r));
    const runId = rows[0]!.run_id as string;
    const mapping = path.join(dir, 'mapping.json');
    fs.writeFileSync(mapping, JSON.stringify({ [`${runId}:a`]: 'first', 'name:leg': 'legacy-work' }));
    const r = await cli(['backfill', '--mapping', mapping, '--home', home]);
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      readRows(home)
        .map((x) => [x.task_key, x.task_type])
        .sort(),
      [
        ['a', 'first'],
        ['b', 'legacy-work'],
        ['c', 'legacy-work'],
      ],
    );
    const verify = await cli(['verify-log', '--home', home]);
    assert.equal(verify.exitCode, 0, verify.all);
    const backup = fs.readdirSync(home).find((f) => /^runs\.jsonl\.before-backfill-\d{8}T\d{6}$/.test(f));
    assert.ok(backup, fs.readdirSync(home).join(', '));
    const old = await cli(['verify-log', '--home', home, '--log', path.join(home, backup)]);
    assert.equal(old.exitCode, 0, old.all);
    // Editing a row without rechaining is what verify-log exists to catch: the tool's rewrite is not that.
    const log = path.join(home, 'runs.jsonl');
    fs.writeFileSync(log, fs.readFileSync(log, 'utf8').replace('"legacy-work"', '"forged"'));
    assert.equal((await cli(['verify-log', '--home', home])).exitCode, 1);
  });
});
