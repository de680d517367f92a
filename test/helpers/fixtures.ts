import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { EvalRow } from '../../extension/core/store/eval-row';

const created: string[] = [];
// Temporary folders go when the test process exits; VERDICT_KEEP_TMP=1 keeps them for a post-mortem.
process.on('exit', () => {
  if (process.env.VERDICT_KEEP_TMP) return;
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary folder under the OS temp dir (real path), removed when the test process exits. */
export function tempDir(prefix = 'verdict-test-'): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  created.push(dir);
  return dir;
}

/** Runs git in `cwd` with a fixed identity; returns trimmed stdout. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.invalid', ...args], { cwd, encoding: 'utf8' }).trim();
}

/** A git repository with one commit holding `files` (path → content). */
export function makeRepo(dir: string, files: Record<string, string> = { 'README.md': '# fixture\n' }): string {
  fs.mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'fixture');
  return dir;
}

/** Writes a manifest object as JSON to `dir/name` and returns its path. */
export function writeManifest(dir: string, manifest: object, name = 'test.swarm.json'): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(manifest, null, 2));
  return file;
}

/** A script-engine task with defaults a test can override. */
export function scriptTask(key: string, spec: string, check: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { key, engine: 'script', spec, check, task_type: 'test', verified: `${key} works`, ...extra };
}

/** Reads runs.jsonl under `home` as parsed rows. */
export function readRows(home: string): Record<string, unknown>[] {
  const file = path.join(home, 'runs.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** True when a process with this pid exists and is not a zombie (an exited child nobody reaped yet). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** A complete, schema-valid eval row (schemas/eval-row.schema.json) with `over` applied. */
export function sampleRow(over: Partial<EvalRow> = {}): EvalRow {
  return {
    run_id: 'r',
    task_key: 't',
    spec: 's',
    worker_engine: 'script',
    verdict: 'PASS',
    duration_ms: 10,
    worker_tokens: null,
    model: null,
    task_type: null,
    retry: false,
    identity: 'me',
    notes: '',
    attempt: 1,
    harness: 'script',
    lab: null,
    reported_model: null,
    access_plan: null,
    reasoning_effort: null,
    sandbox: 'bwrap',
    tokens_in: null,
    tokens_out: null,
    tokens_cached: null,
    tokens_reasoning: null,
    cost_microusd: null,
    check_exit_code: 0,
    check_output: '',
    worker_exit_code: 0,
    run_name: 'r',
    host: 'h',
    started_at: '2026-01-01T00:00:00Z',
    ended_at: '2026-01-01T00:00:01Z',
    branch: null,
    commit: null,
    prompt_path: '',
    worker_log: '',
    check_log: '',
    receipt_path: '',
    prev_hash: null,
    sealed: null,
    step: 'work',
    group: null,
    candidate: null,
    ...over,
  };
}

/**
 * A custom engine `name` whose binary is a bash script (`body`; the prompt is its $1), written under `<dir>/bin`, and
 * the config file that declares it (model `model`). Returns the config's path and the PATH that finds the binary.
 */
export function bashEngine(dir: string, name: string, body: string, model = `${name}-1`): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, name), `#!/bin/bash\n${body}\n`, { mode: 0o755 });
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ engines: { [name]: { binary: name, argv: ['{spec}'], install: 'a test fixture', output: 'none', model } } }));
  return { config, env: { PATH: `${bin}:${process.env.PATH}` } };
}
