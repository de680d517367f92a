/**
 * Benchmark (not a test): how often a best-of-N group's chosen winner is truly correct, by `select` mode.
 *
 *   npm run bench:selection       (env: BENCH_GROUPS=200 BENCH_SEED=1 BENCH_PARALLEL=4)
 *
 * Task family: "double.sh prints twice its integer argument". Each group has 4 candidates (script engine, plain mode),
 * each drawn from a seeded generator: `correct` (p 0.45); `wrong-*`, which pass the group's check (it tries 3 only) but
 * are wrong on inputs it does not cover — negatives, zero, or numbers above 99 (p 0.3 in all, one of the three at
 * random); `breaker`, right on every input but it also empties `other.txt`, a file another test of the repository
 * reads (p 0.1: only a full-suite check would see it); `fails`, which fails the check (p 0.15). Truly correct: `correct`.
 *
 * Modes, each over the same groups in one manifest run (max_parallel BENCH_PARALLEL) through the real orchestrator:
 * - first-pass: the first candidate to pass wins (the others are stopped);
 * - consensus: `distinguish` with inputs 3, -2, 0, 7, 150 and the probe `bash double.sh "$VERDICT_CASE"`;
 * - ranked with a judge that picks at random among the passing candidates: not run, its expected share computed
 *   exactly (per group, correct passing candidates / passing candidates);
 * - consensus + suite: consensus, with the run-level `suite` (other.txt must still hold what setup wrote) that every
 *   candidate must pass after its check: a breaker then FAILs and never wins.
 * `breaker` candidates count as wrong in every mode.
 * Prints, over the groups that contain a correct candidate that passes, the share whose winner is correct, and the
 * consensus run's wall time against first-pass's (ratio in this one script, same machine, same moment); then, for
 * consensus + suite, each wrong winner's group by what it held (wrong candidates alike outnumbering the right ones, or
 * tied with them).
 */
import fs from 'node:fs';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { runManifest } from '../../extension/core/run/runner';
import { tempDir } from '../helpers/fixtures';
import { parseManifest } from '../../extension/core/run/manifest';

const GROUPS = Number(process.env.BENCH_GROUPS ?? 200);
const SEED = Number(process.env.BENCH_SEED ?? 1);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 4);
const N = 4;

type Kind = 'correct' | 'wrong-negative' | 'wrong-zero' | 'wrong-big' | 'breaker' | 'fails';

/** mulberry32: a small seeded generator (public-domain algorithm by Tommy Ettinger), uniform in [0, 1). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The double.sh a candidate of `kind` writes (and, for a breaker, what else it does). */
function work(kind: Kind): string {
  const body: Record<Kind, string> = {
    correct: 'echo $(($1 * 2))',
    'wrong-negative': 'if [ "$1" -lt 0 ]; then echo $((-$1 * 2)); else echo $(($1 * 2)); fi',
    'wrong-zero': 'if [ "$1" -eq 0 ]; then echo 1; else echo $(($1 * 2)); fi',
    'wrong-big': 'if [ "$1" -gt 99 ]; then echo 99; else echo $(($1 * 2)); fi',
    breaker: 'echo $(($1 * 2))',
    fails: 'echo $(($1 + 2))',
  };
  return `printf '%s\\n' '${body[kind]}' > double.sh${kind === 'breaker' ? '; : > other.txt' : ''}`;
}

/** A manifest of every group under one `select` mode; each candidate's spec picks its kind by VERDICT_CANDIDATE. */
function manifestText(groups: Kind[][], select: 'first-pass' | 'consensus', suite: boolean): string {
  const tasks = groups.map((kinds, g) => ({
    key: `g${g}`,
    engine: 'script',
    repeat: N,
    select,
    max_attempts: 1,
    ...(select === 'consensus' ? { distinguish: { inputs: "printf '%s\\n' 3 -2 0 7 150", probe: 'bash double.sh "$VERDICT_CASE"', timeout_s: 10 } } : {}),
    spec: `case "$VERDICT_CANDIDATE" in ${kinds.map((k, i) => `${i + 1}) ${work(k)} ;;`).join(' ')} esac`,
    check: 'test "$(bash double.sh 3)" = 6 || { echo "double.sh 3 is not 6"; exit 1; }',
    task_type: 'bench-selection',
    verified: 'double.sh 3 prints 6',
  }));
  const suiteFields = suite ? { suite: 'grep -qx kept other.txt || { echo "other.txt lost its line"; exit 1; }', suite_timeout_s: 30 } : {};
  return JSON.stringify(
    { run_name: `selection-${select}${suite ? '-suite' : ''}`, workdir: 'work', max_parallel: PARALLEL, setup: 'echo kept > other.txt', ...suiteFields, tasks },
    null,
    2,
  );
}

async function runMode(dir: string, groups: Kind[][], select: 'first-pass' | 'consensus', suite = false): Promise<{ winners: (number | null)[]; ms: number }> {
  const name = `${select}${suite ? '-suite' : ''}`;
  const file = path.join(dir, `${name}.swarm.json`);
  fs.writeFileSync(file, manifestText(groups, select, suite));
  const engines = resolveEngines();
  const parsed = parseManifest(fs.readFileSync(file, 'utf8'), file, { engines: new Set(engines.keys()) });
  if (!parsed.manifest) throw new Error(`the ${select} manifest does not load: ${JSON.stringify(parsed.problems.slice(0, 3))}`);
  const home = path.join(dir, `home-${name}`);
  const t0 = performance.now();
  const summary = await runManifest({ manifest: parsed.manifest, home, identity: 'bench', engines });
  const ms = performance.now() - t0;
  const winners = groups.map((_, g) => {
    const t = summary.state.tasks.find((x) => x.key === `g${g}`);
    return t?.winner ? Number(/--c(\d+)$/.exec(t.winner)?.[1]) : null;
  });
  return { winners, ms };
}

async function main(): Promise<void> {
  const random = rng(SEED);
  const draw = (): Kind => {
    const r = random();
    if (r < 0.45) return 'correct';
    if (r < 0.75) return (['wrong-negative', 'wrong-zero', 'wrong-big'] as const)[Math.floor(random() * 3)] as Kind;
    if (r < 0.85) return 'breaker';
    return 'fails';
  };
  const groups = Array.from({ length: GROUPS }, () => Array.from({ length: N }, draw));
  const dir = tempDir();
  const first = await runMode(dir, groups, 'first-pass');
  const consensus = await runMode(dir, groups, 'consensus');
  const withSuite = await runMode(dir, groups, 'consensus', true);
  // Groups that contain a correct candidate (every kind but `fails` passes the check).
  const counted = groups.map((kinds, g) => ({ kinds, g })).filter(({ kinds }) => kinds.includes('correct'));
  const share = (winners: (number | null)[]) =>
    counted.filter(({ kinds, g }) => winners[g] !== null && kinds[(winners[g] as number) - 1] === 'correct').length / counted.length;
  const rankedExpected =
    counted.reduce((sum, { kinds }) => sum + kinds.filter((k) => k === 'correct').length / kinds.filter((k) => k !== 'fails').length, 0) / counted.length;
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  console.log(`selection bench: ${GROUPS} groups of ${N} (seed ${SEED}), ${counted.length} with a correct candidate; max_parallel ${PARALLEL}`);
  console.log(`  first-pass                      winner correct in ${pct(share(first.winners))}   wall ${(first.ms / 1000).toFixed(1)} s`);
  console.log(`  ranked (random judge, expected)  winner correct in ${pct(rankedExpected)}`);
  console.log(
    `  consensus                       winner correct in ${pct(share(consensus.winners))}   wall ${(consensus.ms / 1000).toFixed(1)} s (${(consensus.ms / first.ms).toFixed(2)}x first-pass)`,
  );
  console.log(
    `  consensus + suite               winner correct in ${pct(share(withSuite.winners))}   wall ${(withSuite.ms / 1000).toFixed(1)} s (${(withSuite.ms / first.ms).toFixed(2)}x first-pass)`,
  );
  // Why consensus + suite picked a wrong winner: by what the group held once the suite had failed its breakers.
  const why = new Map<string, number>();
  for (const { kinds, g } of counted) {
    const w = withSuite.winners[g];
    if (w !== null && w !== undefined && kinds[w - 1] === 'correct') continue;
    const passing = kinds.filter((k) => k !== 'fails' && k !== 'breaker');
    const right = passing.filter((k) => k === 'correct').length;
    const most = Math.max(0, ...['wrong-negative', 'wrong-zero', 'wrong-big'].map((k) => passing.filter((x) => x === k).length));
    const cause =
      w === null || w === undefined
        ? 'no winner'
        : right < most
          ? `outnumbered: ${most} wrong alike against ${right} right`
          : right === most
            ? `tied ${right} right against ${most} wrong alike`
            : 'the right group was the largest';
    why.set(cause, (why.get(cause) ?? 0) + 1);
  }
  for (const [cause, n] of [...why].sort((a, b) => b[1] - a[1])) console.log(`    wrong winner: ${n} group(s): ${cause}`);
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
