import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { killOrphanedSandboxes } from '../../extension/core/pool/orphans';
import { appendWorker, openWorkerJournal } from '../../extension/core/live/worker-journal';
import { tempDir } from '../helpers/fixtures';

/** /proc start time (field 22) of `pid`. */
function startTime(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string;
}

/** A pool worker's task folder under `home`: attempt state files (status, host, pid) and a journal naming `inits`. */
function taskFolder(home: string, key: string, states: { n: number; status: string; host: string; pid: number }[], inits: ChildProcess[]): void {
  const dir = path.join(home, 'runs', 'r1', 'tasks', key);
  fs.mkdirSync(dir, { recursive: true });
  for (const s of states)
    fs.writeFileSync(path.join(dir, `state-${s.n}.json`), JSON.stringify({ version: 1, runId: 'r1', status: s.status, host: s.host, pid: s.pid, tasks: [] }));
  const fd = openWorkerJournal(path.join(dir, 'workers.jsonl'));
  for (const p of inits) appendWorker(fd, { init: { pid: p.pid!, startTime: startTime(p.pid!) } });
  fs.closeSync(fd);
}

const gone = 2 ** 30; // never a live pid (pid_max is far below it)

describe('pool worker crash recovery (pool/orphans.ts)', () => {
  it("kills the journaled sandboxes of a dead worker of this host; spares a folder with a live attempt, another host's, and a finished one's", async () => {
    const home = tempDir();
    const procs = Array.from({ length: 4 }, () => spawn('sleep', ['60'], { stdio: 'ignore' }));
    try {
      const [orphan, busy, other, finished] = procs as [ChildProcess, ChildProcess, ChildProcess, ChildProcess];
      await new Promise((r) => setTimeout(r, 50)); // exec'd: the start time is the sleep's
      taskFolder(
        home,
        'dead',
        [
          { n: 1, status: 'finished', host: 'h', pid: gone },
          { n: 2, status: 'running', host: 'h', pid: gone },
        ],
        [orphan],
      );
      taskFolder(
        home,
        'busy',
        [
          { n: 1, status: 'running', host: 'h', pid: gone },
          { n: 2, status: 'running', host: 'h', pid: process.pid },
        ],
        [busy],
      );
      taskFolder(home, 'other', [{ n: 1, status: 'running', host: 'elsewhere', pid: gone }], [other]);
      taskFolder(home, 'finished', [{ n: 1, status: 'finished', host: 'h', pid: gone }], [finished]);
      assert.deepEqual(killOrphanedSandboxes(home, 'h'), [orphan.pid]);
      await new Promise((r) => orphan.once('exit', r));
      for (const p of [busy, other, finished]) assert.equal(p.exitCode ?? p.signalCode, null, `pid ${p.pid} was killed`);
      assert.deepEqual(killOrphanedSandboxes(home, 'h'), [], 'an init already dead is not killed again');
      assert.deepEqual(killOrphanedSandboxes(path.join(home, 'none'), 'h'), []);
    } finally {
      for (const p of procs) p.kill('SIGKILL');
    }
  });
});
