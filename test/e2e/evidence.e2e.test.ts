import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { readTar, sha, writeTar } from '../helpers/tar';

describe('evidence that cannot be quietly edited: verify-log, archive, verify-archive (built CLI, script engine)', function () {
  this.timeout(180_000);
  let dir: string;
  let home: string;
  let runId: string;

  before(async () => {
    dir = tempDir();
    home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# repo\n' });
    const manifest = writeManifest(repo, {
      run_name: 'evidence',
      worktrees: true,
      max_parallel: 2,
      tasks: [
        scriptTask('one', 'echo one > one.txt', 'grep -qx one one.txt || { echo "one.txt wrong"; exit 1; }', { expect_files: ['one.txt'] }),
        scriptTask('two', 'echo nope > two.txt', 'grep -qx two two.txt || { echo "two.txt wrong"; exit 1; }', { expect_files: ['two.txt'] }),
      ],
    });
    const r = await cli(['run', manifest, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    assert.equal(rows.length, 3, r.all); // one: PASS; two: FAIL twice
    runId = String(rows[0]?.run_id);
    assert.ok(git(repo, 'branch', '--list', `verdict/${runId}/*`).includes('one'));
  });

  it('every row of the run carries prev_hash; verify-log says intact (exit 0)', async () => {
    const rows = readRows(home);
    assert.equal(rows[0]?.prev_hash, null);
    for (const r of rows.slice(1)) assert.match(String(r.prev_hash), /^[0-9a-f]{64}$/);
    assert.ok(fs.existsSync(path.join(home, 'runs.chain.json')));
    const v = await cli(['verify-log', '--home', home]);
    assert.equal(v.exitCode, 0, v.all);
    assert.match(v.all ?? '', /3 rows in 1 chain/);
    assert.match(v.all ?? '', /intact/);
  });

  it('archive, then verify-archive: intact (exit 0); a changed member with SHA256SUMS recomputed: tampered (exit 1)', async () => {
    const out = path.join(dir, 'run.tar');
    const a = await cli(['archive', runId, '--home', home, '--out', out]);
    assert.equal(a.exitCode, 0, a.all);
    assert.match(a.all ?? '', /recorded in .*archives\.jsonl/);
    const m = await readTar(out);
    for (const name of [
      'run/manifest.json',
      'rows.jsonl',
      'diffs/one.diff',
      'diffs/two.diff',
      'branches.bundle',
      'SHA256SUMS',
      'run/tasks/one/attempt-1/prompt.md',
      'run/tasks/one/attempt-1/worker.log',
      'run/tasks/one/attempt-1/check.log',
      'run/tasks/one/attempt-1/receipt.json',
      'run/tasks/two/attempt-2/check.log',
    ]) {
      assert.ok(m.has(`${runId}/${name}`), `${name} missing: ${[...m.keys()].join(', ')}`);
    }
    assert.match(m.get(`${runId}/diffs/one.diff`)?.toString() ?? '', /\+one/);
    const ok = await cli(['verify-archive', out, '--home', home]);
    assert.equal(ok.exitCode, 0, ok.all);
    assert.match(ok.all ?? '', /intact/);

    const check = `${runId}/run/tasks/two/attempt-2/check.log`;
    m.set(check, Buffer.from('all good\n'));
    const sums = [...m.keys()]
      .filter((n) => !n.endsWith('/SHA256SUMS'))
      .sort()
      .map((n) => `${sha(m.get(n) as Buffer)}  ${n.slice(runId.length + 1)}\n`)
      .join('');
    m.set(`${runId}/SHA256SUMS`, Buffer.from(sums));
    const forged = path.join(dir, 'forged.tar');
    await writeTar(forged, m);
    const bad = await cli(['verify-archive', forged, '--home', home]);
    assert.equal(bad.exitCode, 1, bad.all);
    assert.match(bad.all ?? '', /TAMPERED: SHA256SUMS .* is not the manifest recorded for run/);
    const junk = path.join(dir, 'junk.tar');
    fs.writeFileSync(junk, 'x');
    assert.equal((await cli(['verify-archive', junk, '--home', home])).exitCode, 2);
  });

  it('an edited row: verify-log exits 1 naming its line, run_id/task_key and attempt', async () => {
    const log = path.join(home, 'runs.jsonl');
    const lines = fs.readFileSync(log, 'utf8').trimEnd().split('\n');
    const i = lines.findIndex((l) => l.includes('"verdict":"FAIL"'));
    assert.ok(i >= 0 && i < lines.length - 1, 'a FAIL row that is not the last');
    const row = JSON.parse(lines[i] as string) as { task_key: string; attempt: number };
    lines[i] = (lines[i] as string).replace('"verdict":"FAIL"', '"verdict":"PASS"');
    fs.writeFileSync(log, lines.join('\n') + '\n');
    const v = await cli(['verify-log', '--home', home]);
    assert.equal(v.exitCode, 1, v.all);
    assert.match(v.all ?? '', new RegExp(`TAMPERED: line ${i + 1} \\(${runId}/${row.task_key} attempt ${row.attempt}\\) was edited`));
    const j = await cli(['verify-log', '--home', home, '--json']);
    assert.equal(j.exitCode, 1);
    assert.equal((JSON.parse(j.stdout) as { findings: { line: number }[] }).findings[0]?.line, i + 1);
    assert.equal((await cli(['verify-log', '--log', path.join(dir, 'missing.jsonl')])).exitCode, 2);
  });
});
