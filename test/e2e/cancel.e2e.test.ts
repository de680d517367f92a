import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI } from '../helpers/cli';
import { alive, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import type { RunState } from '../../extension/core/live/state';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Ctrl-C during a run', function () {
  this.timeout(60000);
  it('kills every worker process group, records CANCELLED, finishes the state; a second Ctrl-C does not cut the cleanup', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    const pids = path.join(dir, 'pids');
    // Workers ignore SIGTERM and leave a grandchild, so only the group SIGKILL after the grace period ends them.
    const spec = `trap '' TERM; (trap '' TERM; sleep 300) & echo $! >> ${pids}; echo $$ >> ${pids}; sleep 300`;
    const tasks = ['a', 'b', 'c', 'd'].map((k) => scriptTask(k, spec, 'true'));
    const manifest = writeManifest(repo, { worktrees: true, max_parallel: 2, tasks });
    // Unsandboxed (the supervisor's own group kill is what is tested; bubblewrap would end these at the first SIGTERM,
    // and the workers write their pids outside their task dirs). The sandboxed cancel: containment.e2e.test.ts.
    // --force: the check `true` is a lint error; the workers never reach it.
    const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-sandbox', '--force'], { reject: false, all: true, stdin: 'ignore' });
    let out = '';
    child.all?.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 200 && (out.match(/▶/g) ?? []).length < 2; i++) await sleep(50);
    for (let i = 0; i < 100 && (fs.existsSync(pids) ? fs.readFileSync(pids, 'utf8').trim().split('\n').length : 0) < 4; i++) await sleep(50);
    child.kill('SIGINT');
    await sleep(300);
    child.kill('SIGINT');
    const r = await child;
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.all ?? '', /cancelling: stopping every worker process group/);
    assert.match(r.all ?? '', /still cleaning up; please wait/);
    await sleep(200);
    const all = fs.readFileSync(pids, 'utf8').trim().split('\n').map(Number);
    assert.equal(all.length, 4);
    for (const p of all) assert.equal(alive(p), false, `process ${p} survived the cancel`);
    const runs = fs.readdirSync(path.join(home, 'runs'));
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runs[0] as string, 'state.json'), 'utf8')) as RunState;
    assert.equal(state.status, 'cancelled');
    assert.ok(state.endedAt);
    assert.deepEqual(
      state.tasks.map((t) => t.status),
      ['CANCELLED', 'CANCELLED', 'CANCELLED', 'CANCELLED'],
    );
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((x) => x.verdict),
      ['CANCELLED', 'CANCELLED'],
      'the two running attempts are recorded; the two queued never started',
    );
    assert.match(r.all ?? '', /0\/4 passed .*\(cancelled\)/);
  });
});
