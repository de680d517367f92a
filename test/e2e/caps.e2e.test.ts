import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI } from '../helpers/cli';
import { alive, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { memoryCapMechanism } from '../../extension/core/process/memory-cap';

// Memory and output caps, tried as a hostile worker would: a step that allocates past its cap, one that floods its
// stdout, one that leaves a huge sparse file for the orchestrator to snapshot. None of them may take the orchestrator,
// a sibling task or VERDICT_HOME's disk with it.

/** The peak-RSS preload (test/helpers/peak-rss.cjs): the CLI writes its VmHWM (kB) to a file when it exits. */
const PEAK_RSS = path.resolve('test/helpers/peak-rss.cjs');

/** The most the orchestrator may hold resident whatever a worker writes, kB. */
const ORCHESTRATOR_PEAK_KB = 300 * 1024;

/** `verdict ARGS` with the peak-RSS preload; resolves with the result and the peak (kB). */
async function runMeasured(args: string[], dir: string, env: Record<string, string> = {}) {
  const hwm = path.join(dir, 'peak-rss');
  const child = execa('node', ['--require', PEAK_RSS, CLI, ...args], {
    env: { ...env, VERDICT_TEST_PEAK_RSS_FILE: hwm },
    reject: false,
    all: true,
    stdin: 'ignore',
  });
  const r = await child;
  const text = fs.existsSync(hwm) ? fs.readFileSync(hwm, 'utf8') : '';
  assert.match(text, /^\d+$/, `no peak RSS recorded (${hwm}): ${r.all}`);
  return { r, peakKb: Number(text), pid: child.pid as number };
}

describe("caps: memory, output, and what the orchestrator holds of a worker's files", function () {
  this.timeout(600000);

  before(async function () {
    await requireSandbox(this);
  });

  /** Allocates and touches `mb` MB (python3), then sleeps: what a careless or hostile worker's build does. */
  const hog = (mb: number) => `python3 -c 'import time; b = bytearray(${mb} * 1024 * 1024); b[::4096] = bytes(len(b[::4096])); time.sleep(3)'`;

  it('a worker past its memory_mb is killed and FAILs, retried with "ran out of memory at N MB"; its sibling PASSes and the orchestrator stays small', async function () {
    const mech = memoryCapMechanism();
    if (mech.kind === 'none') {
      console.log(`      (skipped: ${mech.line})`);
      this.skip();
    }
    const dir = tempDir();
    // Attempt 2 does the work only when its failure context says why attempt 1 failed.
    const worker = [
      'if grep -q "ran out of memory at 128 MB" "${VERDICT_FAILURE_FILE:-/nonexistent}" 2>/dev/null; then echo fixed > out.txt; exit 0; fi',
      hog(400),
      'echo "allocated 400 MB under a 128 MB cap" > out.txt',
    ].join('\n');
    const file = writeManifest(dir, {
      workdir: 'w',
      memory_mb: 512,
      tasks: [
        scriptTask('hog', worker, 'grep -q fixed out.txt || { cat out.txt; exit 1; }', { memory_mb: 128, max_attempts: 2 }),
        // The sibling runs at the same time, under the manifest's 512 MB, and uses 200 MB of it.
        scriptTask('sibling', `${hog(200)}\necho ok > out.txt`, 'test -s out.txt || { echo no out.txt; exit 1; }', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const { r, peakKb, pid } = await runMeasured(['run', file, '--home', home, '--no-dashboard'], dir, { HOME: path.join(dir, 'user-home') });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.all ?? '', new RegExp(`memory cap: ${mech.kind === 'cgroup2' ? 'cgroup v2' : 'cgroup v1'}`));
    const rows = readRows(home);
    const hogRows = rows.filter((row) => row.task_key === 'hog');
    assert.deepEqual(
      hogRows.map((row) => row.verdict),
      ['FAIL', 'PASS'],
      r.all,
    );
    assert.match(String(hogRows[0]?.notes), /the worker ran out of memory at 128 MB/);
    assert.deepEqual(
      hogRows.map((row) => [row.mem_cap, row.memory_mb]),
      [
        [mech.kind, 128],
        [mech.kind, 128],
      ],
    );
    const failure = fs.readFileSync(path.join(home, 'runs', String(hogRows[0]?.run_id), 'tasks', 'hog', 'attempt-2', 'failure.md'), 'utf8');
    assert.match(failure, /ran out of memory at 128 MB/);
    const sibling = rows.find((row) => row.task_key === 'sibling');
    assert.equal(sibling?.verdict, 'PASS', r.all);
    assert.deepEqual([sibling?.mem_cap, sibling?.memory_mb], [mech.kind, 512]);
    assert.ok(peakKb < ORCHESTRATOR_PEAK_KB, `the orchestrator's peak RSS was ${Math.round(peakKb / 1024)} MB`);
    // `verdict runs RUN` says under which memory containment the attempts ran.
    const runs = await execa('node', [CLI, 'runs', String(hogRows[0]?.run_id), '--home', home], { reject: false, all: true });
    assert.match(runs.all ?? '', new RegExp(`memory: ${mech.kind} 128 MB \\(hog#1, hog#2\\); ${mech.kind} 512 MB \\(sibling#1\\)`));
    // No step's cgroup is left behind (they are named step-<orchestrator pid>-…).
    assert.deepEqual(
      fs.readdirSync(mech.parent as string).filter((n) => n.startsWith(`step-${pid}-`)),
      [],
    );
  });

  it('a worker cannot leave its cgroup or raise its limit (it writes the cgroup files it can see), and is still killed', async function () {
    const mech = memoryCapMechanism();
    if (mech.kind === 'none') this.skip();
    const dir = tempDir();
    // Every cgroup file that would free it: the hierarchy's root procs, its own cgroup's limit (found from /proc/self/cgroup).
    const escape = [
      'for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/memory/cgroup.procs /sys/fs/cgroup/unified/cgroup.procs; do echo $$ > $f 2>/dev/null && echo "moved via $f"; done',
      'for rel in $(cut -d: -f3 /proc/self/cgroup | sort -u); do for d in /sys/fs/cgroup$rel /sys/fs/cgroup/memory$rel; do',
      '  for f in memory.max memory.limit_in_bytes memory.memsw.limit_in_bytes; do echo 9223372036854771712 > $d/$f 2>/dev/null && echo "raised $d/$f"; done; done; done',
      'cat /proc/self/cgroup',
      hog(400),
      'echo escaped > out.txt',
    ].join('\n');
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [scriptTask('escape', escape, 'grep -q escaped out.txt || { echo no; exit 1; }', { memory_mb: 128, max_attempts: 1 })],
    });
    const home = path.join(dir, 'home');
    const { r } = await runMeasured(['run', file, '--home', home, '--no-dashboard'], dir, { HOME: path.join(dir, 'user-home') });
    const row = readRows(home)[0];
    const log = fs.readFileSync(path.join(home, 'runs', String(row?.run_id), 'tasks', 'escape', 'attempt-1', 'worker.log'), 'utf8');
    assert.doesNotMatch(log, /moved via|raised/, log);
    assert.equal(row?.verdict, 'FAIL', r.all);
    assert.match(String(row?.notes), /the worker ran out of memory at 128 MB/);
  });

  it("--no-sandbox: a process that scrubbed its environment (no step cookie) and left its session is still ended with its step's cgroup", async function () {
    const mech = memoryCapMechanism();
    if (mech.kind === 'none') this.skip();
    const dir = tempDir();
    const worker = 'setsid env -i /bin/sh -c \'echo $$ > "$0"; exec sleep 300\' "$PWD/daemon.pid" < /dev/null > /dev/null 2>&1 &\nsleep 0.5; echo ok > out.txt';
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('daemon', worker, 'test -s out.txt || { echo no; exit 1; }', { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const { r } = await runMeasured(['run', file, '--home', home, '--no-dashboard', '--no-sandbox'], dir, { HOME: path.join(dir, 'user-home') });
    assert.equal(r.exitCode, 0, r.all);
    const pid = Number(fs.readFileSync(path.join(dir, 'w', 'daemon', 'daemon.pid'), 'utf8'));
    assert.ok(pid > 1);
    const left = alive(pid);
    if (left) process.kill(pid, 'SIGKILL');
    assert.equal(left, false, `the scrubbed daemon ${pid} outlived its step`);
  });

  it('a check past its memory_mb FAILs whatever it exits (`! cmd` of a killed command would pass)', async function () {
    const mech = memoryCapMechanism();
    if (mech.kind === 'none') this.skip();
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [scriptTask('negated', 'echo ok > out.txt', `! ${hog(400)}`, { memory_mb: 128, max_attempts: 1 })],
    });
    const home = path.join(dir, 'home');
    const { r } = await runMeasured(['run', file, '--home', home, '--no-dashboard'], dir, { HOME: path.join(dir, 'user-home') });
    assert.equal(r.exitCode, 1, r.all);
    const row = readRows(home)[0];
    assert.equal(row?.verdict, 'FAIL', r.all);
    assert.match(String(row?.notes), /the check ran out of memory at 128 MB/);
  });

  it('where no cgroup can be had it says so at start and every row says mem_cap "none"', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [scriptTask('free', `${hog(64)}\necho ok > out.txt`, 'test -s out.txt || { echo no out.txt; exit 1; }', { memory_mb: 32, max_attempts: 1 })],
    });
    const home = path.join(dir, 'home');
    const { r } = await runMeasured(['run', file, '--home', home, '--no-dashboard'], dir, { HOME: path.join(dir, 'user-home'), VERDICT_MEMORY_CAP: 'none' });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.all ?? '', /memory cap: none — VERDICT_MEMORY_CAP=none; steps run without a memory limit \(rows say mem_cap "none"\)/);
    const row = readRows(home)[0];
    assert.deepEqual([row?.verdict, row?.mem_cap, row?.memory_mb], ['PASS', 'none', 32]);
  });

  it('a worker writing 1 GiB to stdout (and a check writing 200 MB) leave logs within log_max_mb: head, a cut line, tail', async () => {
    const dir = tempDir();
    const worker = 'echo FIRST-LINE; yes 0123456789abcdef | head -c 1073741824; echo; echo LAST-LINE; echo ok > out.txt';
    const check = 'echo CHECK-START; yes check-output | head -c 200000000; echo; echo CHECK-END; test -s out.txt';
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [scriptTask('flood', worker, check, { max_attempts: 1 }), scriptTask('small', worker, check, { max_attempts: 1, log_max_mb: 4 })],
    });
    const home = path.join(dir, 'home');
    const { r, peakKb } = await runMeasured(['run', file, '--home', home, '--no-dashboard'], dir, { HOME: path.join(dir, 'user-home') });
    assert.equal(r.exitCode, 0, r.all);
    for (const [key, capMb] of [
      ['flood', 64],
      ['small', 4],
    ] as const) {
      const attempt = path.join(home, 'runs', String(readRows(home)[0]?.run_id), 'tasks', key, 'attempt-1');
      for (const [log, first, last, total] of [
        ['worker.log', 'FIRST-LINE', 'LAST-LINE', 1073741824],
        ['check.log', 'CHECK-START', 'CHECK-END', 200000000],
      ] as const) {
        const size = fs.statSync(path.join(attempt, log)).size;
        assert.ok(size <= capMb * 1024 * 1024, `${key}/${log} is ${size} bytes, over ${capMb} MB`);
        const fd = fs.openSync(path.join(attempt, log), 'r');
        const head = Buffer.alloc(64);
        fs.readSync(fd, head, 0, 64, 0);
        const tail = Buffer.alloc(64);
        fs.readSync(fd, tail, 0, 64, size - 64);
        fs.closeSync(fd);
        assert.match(head.toString(), new RegExp(`^${first}\n`), `${key}/${log} keeps its head`);
        assert.match(tail.toString(), new RegExp(`${last}\n$`), `${key}/${log} keeps its tail`);
        const text = fs.readFileSync(path.join(attempt, log), 'latin1');
        const m = /\n\[verdict\] (\d+) +bytes of output were cut here: a step's log keeps at most (\d+) MB \(log_max_mb\)[^\n]*\n/.exec(text);
        assert.ok(m, `${key}/${log} has no cut line`);
        assert.equal(Number(m[2]), capMb);
        // Nothing writes the log while it is compacted (core/process/log-cap.ts): every byte printed was kept or counted.
        const printed = `${first}\n`.length + total + '\n'.length + `${last}\n`.length;
        assert.equal(Number(m[1]), printed - (size - m[0].length), `${key}/${log}: ${m[1]} bytes cut of ${printed}, ${size} kept`);
      }
    }
    assert.ok(peakKb < ORCHESTRATOR_PEAK_KB, `the orchestrator's peak RSS was ${Math.round(peakKb / 1024)} MB`);
  });

  it('bad input: memory_mb or log_max_mb out of range is a load error naming file:line:column (manifest and config)', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'bad.swarm.json');
    fs.writeFileSync(
      file,
      [
        '{"workdir": "w",',
        ' "log_max_mb": 0,',
        ' "tasks": [{"key": "a", "engine": "script", "spec": "true", "check": "true", "verified": "x",',
        '   "memory_mb": 8}]}',
      ].join('\n'),
    );
    const r = await execa('node', [CLI, 'run', file, '--home', path.join(dir, 'home'), '--no-dashboard'], { reject: false, all: true, stdin: 'ignore' });
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.all ?? '', new RegExp(`${file}:2:16: error: log_max_mb: must be >= 1, got 0`));
    assert.match(r.all ?? '', new RegExp(`${file}:4:17: error: tasks\\[0\\]\\.memory_mb: must be >= 16, got 8`));
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, '{\n  "log_max_mb": 1.5\n}\n');
    const good = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('a', 'true', 'true')] });
    const c = await execa('node', [CLI, 'run', good, '--config', config, '--home', path.join(dir, 'home'), '--no-dashboard'], {
      reject: false,
      all: true,
      stdin: 'ignore',
    });
    assert.equal(c.exitCode, 2, c.all);
    assert.match(c.all ?? '', new RegExp(`${config}:2:17: log_max_mb: must be an integer number of MB from 1 to 16384`));
  });

  it("plain mode: a 3 GiB sparse file (and a 1.9 GiB one) is snapshotted without entering the orchestrator's memory", async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask('huge', 'truncate -s 3G big.bin && echo ok > out.txt', 'test -f big.bin && test -s out.txt', { max_attempts: 1 }),
        scriptTask('large', 'truncate -s 1900M big.bin && echo ok > out.txt', 'test -f big.bin && test -s out.txt', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const { r, peakKb } = await runMeasured(['run', file, '--home', home, '--no-dashboard'], dir, { HOME: path.join(dir, 'user-home') });
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      readRows(home).map((row) => row.verdict),
      ['PASS', 'PASS'],
      r.all,
    );
    assert.ok(peakKb < ORCHESTRATOR_PEAK_KB, `the orchestrator's peak RSS was ${Math.round(peakKb / 1024)} MB (bound ${ORCHESTRATOR_PEAK_KB / 1024} MB)`);
  });
});
