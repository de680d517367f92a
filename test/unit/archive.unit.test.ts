import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { archiveCommand } from '../../extension/cli/archive-command';
import { InputError } from '../../extension/cli/io';
import { verifyArchiveCommand } from '../../extension/cli/verify-archive-command';
import { archivesLogPath, verifyArchive } from '../../extension/core/store/archive';
import { appendEvalRow } from '../../extension/core/store/eval-log';
import { git, makeRepo, sampleRow, tempDir } from '../helpers/fixtures';
import { readTar, sha, writeTar } from '../helpers/tar';

function collector() {
  const out: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => out.push(l) }, text: () => out.join('\n') };
}

/** A home holding run r1 in worktree mode: task a passed on its branch, task b has no branch commits. */
async function fixture(): Promise<{ home: string; repo: string; dir: string }> {
  const dir = tempDir();
  const home = path.join(dir, 'home');
  const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# r\n' });
  const base = git(repo, 'rev-parse', 'HEAD');
  git(repo, 'checkout', '-q', '-b', 'verdict/r1/a');
  fs.writeFileSync(path.join(repo, 'out.txt'), 'work\n');
  git(repo, 'add', 'out.txt');
  git(repo, 'commit', '-q', '-m', 'work');
  const tip = git(repo, 'rev-parse', 'HEAD');
  git(repo, 'checkout', '-q', 'main');
  git(repo, 'branch', 'verdict/r1/b', base);
  const run = path.join(home, 'runs', 'r1');
  fs.mkdirSync(path.join(run, 'tasks', 'a', 'attempt-1'), { recursive: true });
  fs.writeFileSync(path.join(run, 'manifest.json'), JSON.stringify({ source: 'x.swarm.json', manifest: { tasks: [] } }));
  const state = {
    version: 1,
    runId: 'r1',
    runName: 'r1',
    manifestFile: 'x',
    identity: 'me',
    host: 'h',
    pid: 1,
    status: 'finished',
    startedAt: 0,
    heartbeatAt: 0,
    endedAt: 1,
    maxParallel: 1,
    worktrees: true,
    repo,
    baseRef: 'HEAD',
    baseSha: base,
    tasks: [
      { key: 'a', branch: 'verdict/r1/a', commit: tip },
      { key: 'b', branch: 'verdict/r1/b', commit: null },
    ],
  };
  fs.writeFileSync(path.join(run, 'state.json'), JSON.stringify(state));
  for (const f of ['prompt.md', 'worker.log', 'check.log', 'receipt.json']) fs.writeFileSync(path.join(run, 'tasks', 'a', 'attempt-1', f), `${f} of a\n`);
  await appendEvalRow(path.join(home, 'runs.jsonl'), sampleRow({ run_id: 'r1', task_key: 'a', commit: tip, branch: 'verdict/r1/a' }));
  await appendEvalRow(path.join(home, 'runs.jsonl'), sampleRow({ run_id: 'other', task_key: 'z' }));
  return { home, repo, dir };
}

describe('verdict archive and verify-archive', function () {
  this.timeout(60_000);

  it('writes one tar with records, rows, diffs, a bundle and SHA256SUMS, and records the manifest hash', async () => {
    const { home, repo, dir } = await fixture();
    const out = path.join(dir, 'r1.tar');
    const c = collector();
    assert.equal(await archiveCommand('r1', { home, out }, c.io), 0, c.text());
    const m = await readTar(out);
    for (const name of [
      'run/manifest.json',
      'run/state.json',
      'run/tasks/a/attempt-1/prompt.md',
      'run/tasks/a/attempt-1/worker.log',
      'run/tasks/a/attempt-1/check.log',
      'run/tasks/a/attempt-1/receipt.json',
      'rows.jsonl',
      'diffs/a.diff',
      'diffs/b.diff',
      'branches.bundle',
      'archive.json',
      'SHA256SUMS',
    ]) {
      assert.ok(m.has(`r1/${name}`), `r1/${name} missing: ${[...m.keys()].join(', ')}`);
    }
    assert.match(m.get('r1/diffs/a.diff')?.toString() ?? '', /\+\+\+ b\/out\.txt\n@@ .* @@\n\+work/);
    assert.equal(m.get('r1/diffs/b.diff')?.toString(), '');
    const rows = (m.get('r1/rows.jsonl')?.toString() ?? '').trim().split('\n');
    assert.equal(rows.length, 1, "only the run's own rows");
    assert.match(rows[0] as string, /"prev_hash":null/);
    const sums = m.get('r1/SHA256SUMS')?.toString() ?? '';
    assert.match(sums, new RegExp(`^${sha(m.get('r1/archive.json') as Buffer)}  archive\\.json$`, 'm'));
    assert.equal(sums.trim().split('\n').length, m.size - 1, 'every member but SHA256SUMS is listed');
    // The bundle holds the task branch: it unbundles into a clone of the base.
    const bundle = path.join(dir, 'b.bundle');
    fs.writeFileSync(bundle, m.get('r1/branches.bundle') as Buffer);
    assert.match(git(repo, 'bundle', 'list-heads', bundle), /refs\/heads\/verdict\/r1\/a/);
    const rec = JSON.parse(fs.readFileSync(archivesLogPath(home), 'utf8').trim()) as { manifest_sha256: string; prev_hash: unknown; run_id: string };
    assert.equal(rec.manifest_sha256, sha(m.get('r1/SHA256SUMS') as Buffer));
    assert.equal(rec.prev_hash, null);
    assert.ok(fs.existsSync(path.join(home, 'archives.chain.json')));

    const v = collector();
    assert.equal(await verifyArchiveCommand(out, { home }, v.io), 0, v.text());
    assert.match(v.text(), /intact/);
    await assert.rejects(archiveCommand('r1', { home, out }, collector().io), /exists; archives are never overwritten/);
  });

  it('a member changed and SHA256SUMS recomputed: caught against archives.jsonl', async () => {
    const { home, dir } = await fixture();
    const out = path.join(dir, 'r1.tar');
    await archiveCommand('r1', { home, out }, collector().io);
    const m = await readTar(out);
    m.set('r1/run/tasks/a/attempt-1/check.log', Buffer.from('all tests passed\n'));
    const sums = [...m.keys()]
      .filter((n) => n !== 'r1/SHA256SUMS')
      .sort()
      .map((n) => `${sha(m.get(n) as Buffer)}  ${n.slice(3)}\n`)
      .join('');
    m.set('r1/SHA256SUMS', Buffer.from(sums));
    const forged = path.join(dir, 'forged.tar');
    await writeTar(forged, m);
    const c = collector();
    assert.equal(await verifyArchiveCommand(forged, { home }, c.io), 1);
    assert.match(c.text(), /TAMPERED: SHA256SUMS \(sha256 [0-9a-f]{64}\) is not the manifest recorded for run r1 .*changed and its manifest recomputed/);
  });

  it('a member changed without recomputing: the member is named', async () => {
    const { home, dir } = await fixture();
    const out = path.join(dir, 'r1.tar');
    await archiveCommand('r1', { home, out }, collector().io);
    const m = await readTar(out);
    m.set('r1/diffs/a.diff', Buffer.from('nothing to see\n'));
    m.set('r1/extra.txt', Buffer.from('added\n'));
    const forged = path.join(dir, 'forged.tar');
    await writeTar(forged, m);
    const v = await verifyArchive(forged, archivesLogPath(home));
    assert.equal(v.intact, false);
    assert.ok(v.recorded, 'the manifest itself is the recorded one');
    assert.ok(
      v.findings.some((f) => /^diffs\/a\.diff: its SHA-256 is not the one in SHA256SUMS/.test(f)),
      v.findings.join('\n'),
    );
    assert.ok(
      v.findings.some((f) => /extra\.txt: in the archive but not in SHA256SUMS/.test(f)),
      v.findings.join('\n'),
    );
  });

  it('an edited record in archives.jsonl is caught by its chain; another home vouches for nothing; a non-archive is exit 2', async () => {
    const { home, dir } = await fixture();
    const out = path.join(dir, 'r1.tar');
    await archiveCommand('r1', { home, out }, collector().io);
    const other = tempDir();
    const c = collector();
    assert.equal(await verifyArchiveCommand(out, { home: other }, c.io), 1);
    assert.match(c.text(), /no archive of run r1 is recorded/);
    const log = archivesLogPath(home);
    fs.writeFileSync(log, fs.readFileSync(log, 'utf8').replace('"members":', '"members":1'));
    const v = await verifyArchive(out, archivesLogPath(home));
    assert.equal(v.intact, false);
    assert.ok(v.recordLog.length > 0);
    const junk = path.join(dir, 'junk.tar');
    fs.writeFileSync(junk, 'not a tar at all'.repeat(100));
    await assert.rejects(verifyArchiveCommand(junk, { home }, collector().io), (e: unknown) => e instanceof InputError);
    await assert.rejects(
      archiveCommand('nope', { home, out: path.join(dir, 'n.tar') }, collector().io),
      (e: unknown) => e instanceof InputError && /no run nope/.test((e as Error).message),
    );
  });
});
