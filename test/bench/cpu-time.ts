/**
 * Timing of whole Node processes for the benchmarks: wall time, and CPU time (user + system of the process, all its
 * threads) read by a preloaded module at exit (cpu-usage.cjs). CPU time is what a busy shared machine inflates least:
 * at a load average of 14 on 2 cores `node -e 0` took 0.6 s of wall but still ~0.07 s of CPU.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const PRELOAD = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), 'cpu-usage.cjs');

/** One process's times, in ms. */
export interface ProcessTimes {
  wallMs: number;
  cpuMs: number;
}

/**
 * Runs `node ARGS` to completion (stdout ignored) and times it.
 * @param input written to its stdin
 * @throws as execFileSync when the process fails
 */
export function timeNode(args: string[], input?: string): ProcessTimes {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-bench-cpu-')), 'cpu');
  const t = performance.now();
  execFileSync(process.execPath, ['-r', PRELOAD, ...args], {
    stdio: ['pipe', 'ignore', 'inherit'],
    input,
    maxBuffer: 1 << 28,
    env: { ...process.env, BENCH_CPU_FILE: file },
  });
  const wallMs = performance.now() - t;
  const cpuMs = Number(fs.readFileSync(file, 'utf8').trim().split('\n')[0]) / 1000;
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  return { wallMs, cpuMs };
}

/** The middle value (upper middle for an even count). */
export function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
}
