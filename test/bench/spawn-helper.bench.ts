/**
 * Benchmark (not a test): the spawn helper's own CPU per spawn (docs/spawning.md), for
 * each helper (perl, node), against a bare fork/exec loop in the same interpreter measured in the same script.
 *
 *   TMPDIR=/dev/shm npm run bench:spawn-helper
 *   env: BENCH_ROUNDS=3  BENCH_SPAWNS=400
 *
 * Each helper is started through spawner.ts (VERDICT_SPAWN_HELPER chooses it) and driven with BENCH_SPAWNS requests
 * after 40 to warm it up, in waves of W (1: one step at a time, as in a run whose steps end apart; 8: eight at once);
 * its CPU is the sum over its threads of /proc/<pid>/task/<tid>/schedstat's first field (ns on a CPU), read before
 * and after. What the children cost is not counted (it is theirs). Workloads:
 * - plain: `/bin/true`, as a sandboxed step is asked for (dieWithHelper, no cookie);
 * - bwrap: `/bin/true` inside the real sandbox arguments of sandbox.ts, as a step is asked for (sandboxInit: the
 *   info fd read, the init killed and waited for); bwrap-no-init: the same without `--info-fd` and sandboxInit, what
 *   the init's kill costs (both skipped where bubblewrap cannot run);
 * - cookie: `/bin/true` unsandboxed, with its cookie: a pass over /proc/*\/environ after each exit (batched) and again
 *   at least 100 ms later on a whole second (shared by the steps that ended within it), so the figure grows with the
 *   number of processes on the machine.
 * The floors: a perl loop doing fork, setsid, the log as stdout and stderr, exec, waitpid; a Node loop doing
 * `child_process.spawn` with the same stdio, detached. Goal: ≤ 0.5 ms per spawn. Rounds alternate the helpers; the
 * median is printed with every round, since the machine is shared.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { bwrapCommand, probeSandbox } from '../../extension/core/process/sandbox';
import { spawnHelperInfo, spawnHelperPid, spawnViaHelper, stopSpawnHelper, type SpawnRequest } from '../../extension/core/process/spawner';
import { STEP_COOKIE_VAR } from '../../extension/core/process/supervisor';
import { tempDir } from '../helpers/fixtures';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SPAWNS = Number(process.env.BENCH_SPAWNS ?? 400);
const WARM = 40;

/** CPU time of every thread of `pid` so far, ms (schedstat: ns on a CPU). */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  return ns / 1e6;
}

type Mode = 'plain' | 'bwrap' | 'bwrap-no-init' | 'cookie';

async function helperRound(kind: 'perl' | 'node', mode: Mode, wave: number, dir: string, bwrap: string | null): Promise<number> {
  process.env.VERDICT_SPAWN_HELPER = kind;
  stopSpawnHelper();
  const info = await spawnHelperInfo();
  if (info?.kind !== kind) throw new Error(`asked for the ${kind} helper, got ${info?.kind ?? 'none'} (${info?.fallback ?? ''})`);
  const env = { ...(process.env as Record<string, string>) };
  let n = 0;
  const request = (): SpawnRequest => {
    const log = path.join(dir, `log${n++ % 16}`);
    if (mode === 'bwrap' || mode === 'bwrap-no-init') {
      const files: string[] = [];
      const init = mode === 'bwrap';
      const command = bwrapCommand({ binary: bwrap as string, writable: [dir], network: true }, dir, '/bin/true', [], files, env, init);
      return { file: command.file, args: command.args, cwd: dir, env, log, files, dieWithHelper: true, sandboxInit: init };
    }
    if (mode === 'cookie') {
      const cookie = `bench${process.pid}x${n}`;
      return { file: '/bin/true', args: [], cwd: dir, env: { ...env, [STEP_COOKIE_VAR]: cookie }, log, cookie, sweepAgainMs: 100 };
    }
    return { file: '/bin/true', args: [], cwd: dir, env, log, dieWithHelper: true };
  };
  const waves = async (count: number) => {
    for (let done = 0; done < count; done += wave) {
      const started = await Promise.all(Array.from({ length: Math.min(wave, count - done) }, () => spawnViaHelper(request())));
      await Promise.all(started.map((s) => s.exited));
    }
  };
  await waves(WARM);
  await new Promise((r) => setTimeout(r, 300));
  const pid = spawnHelperPid() as number;
  const before = cpuMs(pid);
  await waves(SPAWNS);
  // The last second sweeps (on the next whole second or the one after) are part of the cost.
  if (mode === 'cookie') await new Promise((r) => setTimeout(r, 2100));
  return (cpuMs(pid) - before) / SPAWNS;
}

/** The bare loops: the interpreter's own floor for fork + exec with the log as stdout and stderr, ms of CPU per spawn. */
function floorRound(kind: 'perl' | 'node', dir: string): number {
  const log = path.join(dir, 'floor.log');
  const perl = `use POSIX (); my ($n, $log) = @ARGV; sub cpu { my $s = 0; opendir(my $d, "/proc/$$/task"); for (grep /^\\d/, readdir $d) { open(my $f, '<', "/proc/$$/task/$_/schedstat"); $s += (split / /, scalar <$f>)[0]; } $s / 1e6 }
my $c0; for my $i (1 .. $n + ${WARM}) { $c0 = cpu() if $i == ${WARM} + 1; my $pid = fork; if (!$pid) { POSIX::setsid(); open STDIN, '<', '/dev/null'; open STDOUT, '>>', $log; open STDERR, '>&', \\*STDOUT; exec '/bin/true'; POSIX::_exit(127) } waitpid($pid, 0) } print((cpu() - $c0) / $n)`;
  const node = `const { spawn } = require('child_process'); const fs = require('fs'); const [n, log] = [Number(process.argv[1]), process.argv[2]];
const cpu = () => fs.readdirSync('/proc/self/task').reduce((s, t) => s + Number(fs.readFileSync('/proc/self/task/' + t + '/schedstat', 'utf8').split(' ')[0]), 0) / 1e6;
const fd = fs.openSync(log, 'a'); let i = 0, c0 = 0;
const one = () => spawn('/bin/true', [], { stdio: ['ignore', fd, fd], detached: true, env: process.env }).on('exit', () => { if (++i === ${WARM}) c0 = cpu(); if (i < n + ${WARM}) one(); else process.stdout.write(String((cpu() - c0) / n)); });
one();`;
  const out = kind === 'perl' ? execFileSync('perl', ['-e', perl, String(SPAWNS), log]) : execFileSync(process.execPath, ['-e', node, String(SPAWNS), log]);
  return Number(out.toString());
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const saved = process.env.VERDICT_SPAWN_HELPER;
const probe = await probeSandbox();
const bwrap = probe.kind === 'bwrap' ? probe.binary : null;
if (!bwrap) console.log(`bwrap workload skipped: ${probe.kind === 'none' ? probe.reason : 'no sandbox'}`);
const modes: Mode[] = bwrap ? ['plain', 'bwrap', 'bwrap-no-init', 'cookie'] : ['plain', 'cookie'];
const sides: Record<string, number[]> = {};
const add = (name: string, ms: number) => (sides[name] ??= []).push(ms);
const dir = tempDir('verdict-bench-helper-');
for (let round = 0; round < ROUNDS; round++) {
  for (const kind of ['perl', 'node'] as const) add(`floor ${kind}`, floorRound(kind, dir));
  for (const mode of modes) {
    for (const wave of [1, 8]) {
      for (const kind of round % 2 ? (['node', 'perl'] as const) : (['perl', 'node'] as const))
        add(`${mode} W=${wave} ${kind}`, await helperRound(kind, mode, wave, dir, bwrap));
    }
  }
}
stopSpawnHelper();
if (saved === undefined) delete process.env.VERDICT_SPAWN_HELPER;
else process.env.VERDICT_SPAWN_HELPER = saved;
fs.rmSync(dir, { recursive: true, force: true });

const processes = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).length;
console.log(`\nspawn helper CPU per spawn (ms; ${SPAWNS} spawns per round, ${ROUNDS} rounds; ${processes} processes on the machine; goal ≤ 0.5 ms)`);
const fmt = (xs: number[]) => `${xs.map((x) => x.toFixed(3)).join(' / ')} → median ${median(xs).toFixed(3)}`;
for (const kind of ['perl', 'node']) console.log(`  ${`floor ${kind} (bare loop)`.padEnd(26)} ${fmt(sides[`floor ${kind}`] ?? [])}`);
for (const mode of modes) {
  for (const wave of [1, 8]) {
    const perl = median(sides[`${mode} W=${wave} perl`] ?? []);
    const node = median(sides[`${mode} W=${wave} node`] ?? []);
    for (const kind of ['perl', 'node']) {
      const xs = sides[`${mode} W=${wave} ${kind}`] ?? [];
      console.log(`  ${`${mode} W=${wave} ${kind}`.padEnd(26)} ${fmt(xs)} = ${(median(xs) / median(sides[`floor ${kind}`] ?? [])).toFixed(1)}× its floor`);
    }
    console.log(`  ${''.padEnd(26)} perl / node = ${(perl / node).toFixed(2)}`);
  }
}
