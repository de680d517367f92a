/**
 * A short command forked from this process with child_process, stdin its `input` (or closed), stdout and stderr
 * collected: the fallback of process/run-captured.ts where the spawn helper cannot be given output files (no writable
 * temporary folder). No execa: its option handling costs the orchestrator about as much CPU again as the spawn itself
 * (~2.5 ms more per call, measured here).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { timerDelay } from '../fs/timer';

/** How a command ended, with its output as bytes. */
export interface CapturedBytes {
  /** Exit code; null when a signal ended it or it never started. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  /** The time limit ended it (SIGKILL). */
  timedOut: boolean;
  /** It could not start (ENOENT, EACCES…), its output passed maxBuffer, or the spawn helper died while it ran. */
  error: Error | null;
}

/** Options of {@link runForked} and of process/run-captured.ts. */
export interface RunCapturedOptions {
  cwd?: string;
  /** The whole environment (nothing of process.env is added). */
  env?: NodeJS.ProcessEnv;
  /** Kill it (SIGKILL; through the helper, its whole process group) after this long, ms. */
  timeoutMs?: number;
  /** Most bytes kept of stdout (and of stderr); past it: `error`. Default 1 GiB. */
  maxBuffer?: number;
  /** Its standard input (else /dev/null). */
  input?: string | Buffer;
}

/** Runs `file args` forked from this process to its end and says how it ended; never throws (see CapturedBytes.error). */
export function runForked(file: string, args: readonly string[], opts: RunCapturedOptions = {}): Promise<CapturedBytes> {
  const maxBuffer = opts.maxBuffer ?? 1024 * 1024 * 1024;
  return new Promise((resolve) => {
    let child: ChildProcessByStdio<Writable | null, Readable, Readable>;
    try {
      const stdin = opts.input === undefined ? 'ignore' : 'pipe';
      child = spawn(file, args, { cwd: opts.cwd, env: opts.env, stdio: [stdin, 'pipe', 'pipe'] as const }) as ChildProcessByStdio<
        Writable | null,
        Readable,
        Readable
      >;
    } catch (e) {
      resolve({ exitCode: null, signal: null, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), timedOut: false, error: e as Error });
      return;
    }
    if (opts.input !== undefined && child.stdin) {
      child.stdin.on('error', () => undefined); // it exited without reading all of it: its exit says why
      child.stdin.end(opts.input);
    }
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let timedOut = false;
    let error: Error | null = null;
    const tooMuch = () => {
      error ??= new Error(`${file} printed more than ${maxBuffer} bytes`);
      child.kill('SIGKILL');
    };
    child.stdout.on('data', (b: Buffer) => {
      outBytes += b.length;
      if (outBytes > maxBuffer) tooMuch();
      else out.push(b);
    });
    child.stderr.on('data', (b: Buffer) => {
      errBytes += b.length;
      if (errBytes > maxBuffer) tooMuch();
      else err.push(b);
    });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, timerDelay(opts.timeoutMs))
      : null;
    child.on('error', (e) => {
      error ??= e;
    });
    // Once this process is gone, a child of its own may still hold the pipes (`sh -c '…; sleep 30'` killed by the time
    // limit): 'close' would wait for it. After a kill of ours the streams are closed here, so the limit holds.
    child.on('exit', () => {
      if (timedOut || error) {
        child.stdout.destroy();
        child.stderr.destroy();
      }
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      // A command that never started closes with the errno as its "code" (-2 for ENOENT): no exit code at all.
      resolve({ exitCode: child.pid === undefined ? null : code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err), timedOut, error });
    });
  });
}
