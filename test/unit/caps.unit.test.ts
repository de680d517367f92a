import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cutLine, LogCap } from '../../extension/core/process/log-cap';
import { createStepCgroup, probeMemoryCap, memCapLabel } from '../../extension/core/process/memory-cap';
import { stepCaps } from '../../extension/core/run/containment';
import { tempDir } from '../helpers/fixtures';

const MB = 1024 * 1024;

describe('log caps (core/process/log-cap.ts)', () => {
  it("keeps an earlier step's part, the head and the latest tail, with a cut line counting exactly what went", () => {
    const file = path.join(tempDir(), 'worker.log');
    fs.writeFileSync(file, 'EARLIER STEP\n');
    const start = fs.statSync(file).size;
    const fd = fs.openSync(file, 'r+');
    const cap = new LogCap(fd, start, MB);
    const written: Buffer[] = [];
    const unread: Buffer[] = [];
    let readTo = start;
    let seq = 0;
    for (let i = 0; i < 200; i++) {
      const chunk = Buffer.from(Array.from({ length: 2000 }, () => `line ${seq++}\n`).join(''));
      written.push(chunk);
      fs.appendFileSync(file, chunk);
      // The caller has read up to here before each look, except for the last chunk.
      unread.length = 0;
      const done = cap.compact(readTo, (c) => unread.push(c));
      // The caller had read all but this chunk: a compaction hands it exactly that chunk (kept whole in the tail).
      if (done) assert.ok(Buffer.concat(unread).equals(chunk), 'the unread bytes are the chunk appended since');
      readTo = done ? done.end : fs.statSync(file).size;
    }
    const last = Buffer.from('LAST LINE\n');
    fs.appendFileSync(file, last);
    written.push(last);
    unread.length = 0;
    cap.compact(readTo, (c) => unread.push(c));
    fs.closeSync(fd);
    const all = Buffer.concat(written);
    const text = fs.readFileSync(file);
    assert.ok(cap.cutBytes > 0, 'it was compacted');
    assert.ok(text.length - start <= MB, `${text.length - start} bytes kept`);
    assert.equal(text.subarray(0, start).toString(), 'EARLIER STEP\n');
    const line = /\n\[verdict\] (\d+) +bytes of output were cut here: a step's log keeps at most 1 MB \(log_max_mb\), its head and its tail\n/.exec(
      text.toString('latin1'),
    );
    assert.ok(line);
    const head = text.subarray(start, start + MB / 4);
    assert.ok(all.subarray(0, head.length).equals(head), 'the head is the first quarter of the cap');
    const after = text.subarray(start + MB / 4 + Buffer.byteLength(line[0]));
    assert.ok(all.subarray(all.length - after.length).equals(after), 'the tail is the latest output, in order');
    assert.equal(Number(line[1]), all.length - head.length - after.length, 'the count is what went');
  });

  it('leaves a log under its cap alone; the cut line has one length whatever it counts', () => {
    const file = path.join(tempDir(), 'check.log');
    fs.writeFileSync(file, 'short\n');
    const fd = fs.openSync(file, 'r+');
    assert.equal(
      new LogCap(fd, 0, MB).compact(0, () => undefined),
      null,
    );
    fs.closeSync(fd);
    assert.equal(fs.readFileSync(file, 'utf8'), 'short\n');
    assert.equal(cutLine(1, MB).length, cutLine(123456789012345, MB).length);
  });
});

describe('memory caps (core/process/memory-cap.ts)', () => {
  it('says none, with the reason, where no cgroup hierarchy with memory is mounted, or when told so', () => {
    const none = probeMemoryCap('proc /proc proc rw 0 0\n');
    assert.equal(none.kind, 'none');
    assert.match(none.line, /^memory cap: none — no cgroup hierarchy is mounted; steps run without a memory limit \(rows say mem_cap "none"\)/);
    const told = probeMemoryCap(undefined, { VERDICT_MEMORY_CAP: 'none' });
    assert.match(told.line, /VERDICT_MEMORY_CAP=none/);
    const noMemory = probeMemoryCap('cgroup /nonexistent/cpu cgroup rw,cpu 0 0\n');
    assert.match(noMemory.line, /no cgroup hierarchy here has the memory controller/);
  });

  it('a step cgroup on v2 (a folder laid out like one): memory.max, no swap, oom.group; its procs file named; oom_kill and memory.peak read', async () => {
    const parent = tempDir();
    const cg = createStepCgroup({ kind: 'cgroup2', parent, line: '' }, 256);
    assert.ok(cg.dir.startsWith(`${parent}/step-${process.pid}-`));
    const read = (f: string) => fs.readFileSync(path.join(cg.dir, f), 'utf8');
    assert.deepEqual([read('memory.max'), read('memory.swap.max'), read('memory.oom.group')], [String(256 * MB), '0', '1']);
    // The step's process writes its own pid there before its command runs (spawn-helper-semantics "cgroupProcs").
    assert.equal(cg.procsFile, path.join(cg.dir, 'cgroup.procs'));
    assert.equal(cg.oomKills(), 0);
    fs.writeFileSync(path.join(cg.dir, 'memory.events'), 'low 0\nhigh 0\nmax 12\noom 1\noom_kill 2\noom_group_kill 1\n');
    fs.writeFileSync(path.join(cg.dir, 'memory.peak'), `${200 * MB + 1}\n`);
    assert.equal(cg.oomKills(), 2);
    assert.equal(cg.peakBytes(), 200 * MB + 1);
    // A folder that is no cgroup keeps its files: remove says it could not.
    fs.writeFileSync(path.join(cg.dir, 'cgroup.procs'), '');
    assert.equal(await cg.remove(50), false);
  });

  it('a step cgroup on v1: memory.limit_in_bytes; oom_kill of memory.oom_control; a cgroup that cannot be made is an error naming the folder', () => {
    const parent = tempDir();
    const cg = createStepCgroup({ kind: 'cgroup1', parent, line: '' }, 64);
    assert.equal(fs.readFileSync(path.join(cg.dir, 'memory.limit_in_bytes'), 'utf8'), String(64 * MB));
    fs.writeFileSync(path.join(cg.dir, 'memory.oom_control'), 'oom_kill_disable 0\nunder_oom 0\noom_kill 1\n');
    assert.equal(cg.oomKills(), 1);
    const missing = path.join(tempDir(), 'gone');
    assert.throws(() => createStepCgroup({ kind: 'cgroup1', parent: missing, line: '' }, 64), /cannot make the step's memory cgroup .*gone\/step-/);
  });

  it("labels and defaults: a task's caps, else 4096 MB and 64 MB", () => {
    assert.equal(memCapLabel({ kind: 'cgroup2', limitMb: 512 }), 'cgroup2 512 MB');
    assert.equal(memCapLabel({ kind: 'none', limitMb: 4096 }), 'none (4096 MB not enforced)');
    assert.deepEqual(stepCaps({}), { memoryMb: 4096, logMaxBytes: 64 * MB });
    assert.deepEqual(stepCaps({ memoryMb: 100, logMaxMb: 2 }), { memoryMb: 100, logMaxBytes: 2 * MB });
  });
});
