/**
 * Benchmark (not a test): the time Verdict adds to one attempt of the real codex CLI beyond the CLI's own run.
 *
 *   node esbuild.mjs && npm run bench:real-overhead
 *   env: BENCH_THINK_MS=14000  BENCH_ROUNDS=3
 *
 * Each round runs, against its own scripted model server (test/fixtures/model-server) whose every model answer takes
 * BENCH_THINK_MS (codex makes two calls here, a tool call and the final text: with the default the attempt lasts about
 * 30 s, as a short real one does):
 * - the floor: the same `codex exec` command Verdict runs (engines/codex.ts argv, codex's own sandbox off as Verdict's
 *   root-nested runs have it), started directly in a fresh git repository: the CLI's own run and nothing else;
 * - Verdict: `verdict run` of a one-task manifest doing the same task in worktree mode, sandboxed (bubblewrap, a
 *   network namespace of its own), with its check, seal, commit and records (test/helpers/real-engines.ts runRealTask).
 * The two alternate which goes first. Reported per round and as medians: the floor's wall time, Verdict's whole
 * `verdict run` wall time and its attempt's own `duration_ms`, and what Verdict adds (its wall minus the floor) as a
 * share of the floor. The aim is under 5 % of a 30-second attempt.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { probeSandbox } from '../../extension/core/process/sandbox';
import { ensureCli } from '../helpers/agent-clis';
import { makeRepo, tempDir } from '../helpers/fixtures';
import { engineEnv, modelServerUrl, runRealTask } from '../helpers/real-engines';
import { startModelServer } from '../fixtures/model-server';

const THINK_MS = Number(process.env.BENCH_THINK_MS ?? 14000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SPEC = "Create alpha.txt containing 'alpha ready'";

const probe = await probeSandbox();
if (probe.kind !== 'bwrap') {
  console.log(`no sandbox here: ${probe.reason}`);
  process.exit(0);
}
const bin = await ensureCli('codex');

/** The floor: codex exec as Verdict runs it, directly in a fresh repository; its wall time, ms. */
async function floor(): Promise<number> {
  const server = await startModelServer({ thinkMs: THINK_MS });
  try {
    const dir = tempDir('verdict-bench-floor-');
    const repo = makeRepo(path.join(dir, 'repo'));
    const env: Record<string, string> = { ...engineEnv('codex', dir, server), PATH: [bin, process.env.PATH ?? ''].join(path.delimiter) };
    // engineEnv points codex at the server as a sandboxed step reaches it; the floor runs on the host's network.
    const config = path.join(env.CODEX_HOME as string, 'config.toml');
    fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace(modelServerUrl(server), server.url));
    const started = performance.now();
    const r = await execa('codex', ['exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', '-m', 'stub-model', '--', SPEC], {
      cwd: repo,
      env,
      reject: false,
      stdin: 'ignore',
      all: true,
    });
    const ms = performance.now() - started;
    const made = fs.existsSync(path.join(repo, 'alpha.txt')) ? fs.readFileSync(path.join(repo, 'alpha.txt'), 'utf8') : null;
    if (r.exitCode !== 0 || made?.trim() !== 'alpha ready')
      throw new Error(`the floor's codex did not do the task (exit ${r.exitCode}):\n${r.all?.slice(-3000)}`);
    return ms;
  } finally {
    await server.close();
  }
}

/** Verdict: the same task through `verdict run`; its wall time and its attempt's duration_ms. */
async function verdict(): Promise<{ ms: number; attemptMs: number }> {
  const run = await runRealTask({ engine: 'codex', model: 'stub-model', binDirs: [bin], mode: 'worktree', server: { thinkMs: THINK_MS } });
  const row = run.rows.find((r) => r.step === 'work');
  if (run.result.exitCode !== 0 || row?.verdict !== 'PASS')
    throw new Error(`verdict run did not PASS (exit ${run.result.exitCode}):\n${run.result.all?.slice(-3000)}`);
  return { ms: run.ms, attemptMs: Number(row.duration_ms) };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

const floors: number[] = [];
const verdicts: { ms: number; attemptMs: number }[] = [];
console.log(
  `real codex, one attempt, model answers ${THINK_MS} ms each, ${ROUNDS} rounds; load average at start ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
for (let round = 1; round <= ROUNDS; round++) {
  let f: number;
  let v: { ms: number; attemptMs: number };
  if (round % 2) {
    f = await floor();
    v = await verdict();
  } else {
    v = await verdict();
    f = await floor();
  }
  floors.push(f);
  verdicts.push(v);
  console.log(`round ${round}: floor ${s(f)}, verdict run ${s(v.ms)} (attempt ${s(v.attemptMs)}), added ${s(v.ms - f)} = ${pct((v.ms - f) / f)} of the floor`);
}
const f = median(floors);
const v = median(verdicts.map((x) => x.ms));
const added = median(verdicts.map((x, i) => x.ms - (floors[i] as number)));
console.log(
  `median: floor ${s(f)}, verdict run ${s(v)} (${(v / f).toFixed(3)}× the floor), attempt ${s(median(verdicts.map((x) => x.attemptMs)))}; Verdict adds ${s(added)} = ${pct(added / f)} of the CLI's own run (aim: under 5 %); load average at end ${(
    await import('node:os')
  )
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
