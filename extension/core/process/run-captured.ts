/**
 * A short command whose output is wanted (git plumbing, mount): spawned straight with child_process, stdin closed,
 * stdout and stderr collected. No execa: its option handling costs the orchestrator about as much CPU again as the
 * spawn itself (issue 15; ~2.5 ms more per call measured here), and a tree's preparation is a few such calls.
 */
import { spawn } from 'node:child_process';

/** How a {@link runCaptured} command ended. */
export interface Captured {
  /** Exit code; null when a signal ended it or it never started. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The time limit ended it (SIGKILL). */
  timedOut: boolean;
  /** It could not start (ENOENT, EACCES…), or its output passed maxBuffer (it was then killed). */
  error: Error | null;
}

/** Options of {@link runCaptured}. */
export interface RunCapturedOptions {
  cwd?: string;
  /** The whole environment (nothing of process.env is added). */
  env?: NodeJS.ProcessEnv;
  /** Kill it (SIGKILL) after this long, ms. */
  timeoutMs?: number;
  /** Most bytes kept of stdout (and of stderr); past it the command is killed. Default 1 GiB. */
  maxBuffer?: number;
}

/** Runs `file args` to its end and says how it ended; never throws (see Captured.error). */
export function runCaptured(file: string, args: readonly string[], opts: RunCapturedOptions = {}): Promise<Captured> {
  const maxBuffer = opts.maxBuffer ?? 1024 * 1024 * 1024;
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(file, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      resolve({ exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, error: e as Error });
      return;
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
        }, opts.timeoutMs)
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
      resolve({ exitCode: child.pid === undefined ? null : code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), timedOut, error });
    });
  });
}
