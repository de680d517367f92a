import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// select: "consensus" with `distinguish.inputs` naming an engine: the candidates are script-engine tasks, the inputs
// engines custom engines whose binary is a bash script (output `claude`: it ends with a result line that prices it).
// Each first looks for what must not reach it — a VERDICT_* variable, a candidate key in its prompt or material, the
// run's records or worktrees under VERDICT_HOME, the repository's git dir — and fails loudly (exit 7, "LEAK" in its
// log) when it finds one; then it does its part, honest or hostile.

interface TaskJson {
  key: string;
  status: string;
  reason?: string;
  winner?: string;
  consensus?: { groups: string[][]; inputs: number; splitting: number; decided: string };
}
interface StateJson {
  runId: string;
  tasks: TaskJson[];
  spend?: { spentMicroUsd: number };
}

function state(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs')).sort();
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}
const byKey = (s: StateJson, key: string): TaskJson => {
  const t = s.tasks.find((x) => x.key === key);
  assert.ok(t, `no task ${key} in ${JSON.stringify(s.tasks.map((x) => x.key))}`);
  return t;
};

/** The result line a Claude Code run ends with: $0.001, 10 tokens in and 5 out. */
const PRICED = `echo '{"type":"result","is_error":false,"total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5}}'`;

/** A config with one custom engine per entry (name → bash after the leak guard), and the PATH that finds them. */
function inputsEngines(dir: string, home: string, repo: string, list: Record<string, string>): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const engines: Record<string, unknown> = {};
  for (const [name, body] of Object.entries(list)) {
    const script = [
      '#!/bin/bash',
      'leak() { echo "LEAK: $*"; exit 7; }',
      'env | grep -v "^VERDICT_HOST_LOOPBACK=" | grep -q "^\\(VERDICT\\|RINGER\\|FLEET\\)_" && leak "environment: $(env | grep "^VERDICT_" | head -3)"',
      'printf "%s" "$1" | grep -q -e "--c[0-9]" && leak "the prompt names a candidate key"',
      'material=$(printf "%s" "$1" | grep -o "also in [^ ]* (read-only)" | sed "s/^also in //; s/ (read-only)$//")',
      '[ -d "$material" ] || leak "no material folder in the prompt"',
      'found=$(grep -rl -e "--c[0-9]" "$material" 2>/dev/null | head -3); [ -z "$found" ] || leak "material names a candidate key: $found"',
      `for p in runs runs.jsonl worktrees; do [ -e '${home}'/$p ] && leak "VERDICT_HOME/$p is readable"; done`,
      `[ -e '${repo}/.git/HEAD' ] && leak "the git dir is readable"`,
      'ls "$material"/*.diff > /dev/null 2>&1 || leak "no diff in the material: $(ls -A "$material")"',
      body,
      PRICED,
    ].join('\n');
    fs.writeFileSync(path.join(bin, `inputs-${name}`), `${script}\n`, { mode: 0o755 });
    engines[name] = { binary: `inputs-${name}`, argv: ['{spec}'], install: 'a test fixture', output: 'claude', model: `${name}-1` };
  }
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ engines }));
  return { config, env: { PATH: `${bin}:${process.env.PATH}` } };
}

/** Candidate 1 writes a double.sh that is wrong on negative numbers (prints 0), which the check does not try; 2 and 3 a right one. */
const DOUBLER = `if [ "$VERDICT_CANDIDATE" = 1 ]; then printf '%s\\n' 'n=$1; if [ "$n" -lt 0 ]; then echo 0; else echo $((n * 2)); fi' > double.sh; else printf '%s\\n' 'echo $(($1 * 2))' > double.sh; fi`;
const CHECK = 'test "$(bash double.sh 3)" = 6 || { echo "double.sh 3 is not 6"; exit 1; }';
const group = (key: string, engine: string, extra: Record<string, unknown> = {}) =>
  scriptTask(key, DOUBLER, CHECK, {
    repeat: 3,
    select: 'consensus',
    max_attempts: 1,
    timeout_s: 120,
    distinguish: { inputs: { engine }, probe: 'bash double.sh "$VERDICT_CASE"', max_inputs: 5, timeout_s: 20 },
    ...extra,
  });

describe('workflows: consensus inputs written by an engine', function () {
  this.timeout(480000);
  before(async function () {
    await requireSandbox(this);
  });

  it('an honest inputs engine sees the spec and the anonymised diffs, its inputs split the candidates; its row is priced and counted', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    // It writes two inputs, one the check does not try (-3), as files of its working directory.
    const { config, env } = inputsEngines(dir, home, repo, { honest: "printf -- '-3' > 01; printf 7 > 02" });
    const file = writeManifest(repo, { worktrees: true, max_parallel: 1, tasks: [group('fix', 'honest')] });
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const s = state(home);
    const fix = byKey(s, 'fix');
    assert.equal(fix.winner, 'fix--c2', fix.reason);
    assert.deepEqual(fix.consensus, { groups: [['fix--c2', 'fix--c3'], ['fix--c1']], inputs: 2, splitting: 1, decided: 'largest' });
    const receipt = JSON.parse(fs.readFileSync(path.join(home, 'runs', s.runId, 'tasks', 'fix', 'consensus-1', 'receipt.json'), 'utf8')) as {
      inputs: string[];
    };
    assert.deepEqual(receipt.inputs, ['-3', '7']);
    const rows = readRows(home).filter((row) => row.step === 'distinguish');
    assert.equal(rows.length, 1, JSON.stringify(rows));
    const row = rows[0] as Record<string, unknown>;
    assert.deepEqual(
      [row.task_key, row.verdict, row.worker_engine, row.model, row.cost_microusd, row.attempt, row.candidate, row.group],
      ['fix', 'PASS', 'honest', 'honest-1', 1000, 1, null, 'fix'],
    );
    assert.match(String(row.notes), /^wrote 2 input\(s\) for A \(candidate \d\), B \(candidate \d\), C \(candidate \d\)$/);
    // Its prompt holds the task and the candidates' diffs under names only; its cost is in the run's spend.
    const prompt = fs.readFileSync(String(row.prompt_path), 'utf8');
    assert.match(prompt, /double\.sh/);
    assert.doesNotMatch(prompt, /fix--c\d/);
    assert.equal(s.spend?.spentMicroUsd, 1000);
  });

  it('hostile inputs engines (writes outside its folder, 10,000 files, a huge file, links to a tree and /etc/passwd, a FIFO, nothing) do not break the selection', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const outside = [
      path.join(repo, 'planted.txt'),
      path.join(home, 'planted.txt'),
      path.join(dir, 'planted.txt'),
      '/tmp/verdict-inputs-planted.txt',
      path.join(process.env.HOME ?? '/root', 'verdict-inputs-planted.txt'),
    ];
    const { config, env } = inputsEngines(dir, home, repo, {
      // Tries every place it can name (the repository, VERDICT_HOME, the test's folder, /tmp, $HOME, its material),
      // then writes one honest input.
      escape: [
        ...outside.map((p) => `(echo x > '${p}') 2>/dev/null && echo "WROTE ${p}"`),
        '(echo x > "$material/A.diff") 2>/dev/null && echo "WROTE material"',
        "(echo x > ../planted.txt) 2>/dev/null && echo 'WROTE parent'",
        "printf -- '-3' > 01",
      ].join('\n'),
      many: 'for i in $(seq -w 0 9999); do printf -- "-$((10#$i % 7 + 1))" > "c$i"; done',
      huge: "head -c 5000000 /dev/zero | tr '\\0' 7 > 00; printf -- '-3' > 01",
      links: 'ln -s /etc/passwd 00; ln -s "$material" 01; ln -s "$material/A.diff" 02; mkfifo 03; mkdir 04; printf -- \'-3\' > 05',
      mute: 'true',
    });
    const file = writeManifest(repo, {
      worktrees: true,
      max_parallel: 1,
      tasks: [group('esc', 'escape'), group('many', 'many'), group('huge', 'huge'), group('links', 'links'), group('mute', 'mute')],
    });
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const s = state(home);
    const receipt = (key: string) =>
      JSON.parse(fs.readFileSync(path.join(home, 'runs', s.runId, 'tasks', key, 'consensus-1', 'receipt.json'), 'utf8')) as {
        inputs: string[];
        given: number;
        notes: string[];
      };
    // Nothing it tried to write outside its folder is there; its one honest input decided.
    for (const p of outside) assert.equal(fs.existsSync(p), false, `${p} was written`);
    assert.equal(fs.existsSync(path.join(dir, 'planted.txt')), false);
    for (const key of ['esc', 'many', 'huge', 'links']) {
      assert.equal(byKey(s, key).winner, `${key}--c2`, `${key}: ${byKey(s, key).reason}`);
      assert.equal(byKey(s, key).consensus?.decided, 'largest', key);
    }
    assert.deepEqual(receipt('esc').inputs, ['-3']);
    // 10,000 files: the first 5 by name are used, and the count is said.
    assert.deepEqual(receipt('many').inputs, ['-1', '-2', '-3', '-4', '-5']);
    assert.equal(receipt('many').given, 10000);
    assert.ok(
      receipt('many').notes.some((n) => n === 'the inputs engine made 10000 inputs; the first 5 (max_inputs) were used'),
      JSON.stringify(receipt('many').notes),
    );
    // The 5 MB file is left out and said.
    assert.deepEqual(receipt('huge').inputs, ['-3']);
    assert.ok(
      receipt('huge').notes.some((n) => /^the inputs folder: 1 file\(s\) hold more than 1048576 bytes: left out \(00\)$/.test(n)),
      JSON.stringify(receipt('huge').notes),
    );
    // Links (to /etc/passwd, to its material), a FIFO and a folder are left out: no probe read through them.
    assert.deepEqual(receipt('links').inputs, ['-3']);
    assert.ok(
      receipt('links').notes.some((n) => /^the inputs folder: 5 entries are not a regular file \(a link, a folder or a special file\): left out/.test(n)),
      JSON.stringify(receipt('links').notes),
    );
    // It wrote nothing: consensus could not decide, says so, and the first to pass wins.
    const mute = byKey(s, 'mute');
    assert.equal(mute.winner, 'mute--c1');
    assert.equal(mute.consensus?.decided, 'undecided');
    assert.match(
      mute.reason ?? '',
      /consensus could not decide: the inputs engine mute\/mute-1 made no input: it wrote no file that can be read into its folder; falling back to the first to pass \(candidate 1\)/,
    );
    // One row per inputs engine: PASS for those whose inputs counted, ERROR for the mute one; none leaked (exit 7).
    const rows = readRows(home).filter((row) => row.step === 'distinguish');
    assert.deepEqual(rows.map((row) => [row.task_key, row.verdict, row.worker_exit_code]).sort(), [
      ['esc', 'PASS', 0],
      ['huge', 'PASS', 0],
      ['links', 'PASS', 0],
      ['many', 'PASS', 0],
      ['mute', 'ERROR', 0],
    ]);
    const escLog = fs.readFileSync(String(rows.find((row) => row.task_key === 'esc')?.worker_log), 'utf8');
    assert.doesNotMatch(escLog, /WROTE|LEAK/, escLog);
  });

  it('under a budget its reservation would pass, the inputs engine never starts: no cost, the refusal said, the candidates still judged', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    // It would write inputs that split the candidates, and records that it ran in its own log; it must never start.
    const { config, env } = inputsEngines(dir, home, repo, { dear: "echo INPUTS-ENGINE-RAN; printf -- '-3' > 01" });
    const withCap = JSON.parse(fs.readFileSync(config, 'utf8')) as { engines: Record<string, Record<string, unknown>> };
    (withCap.engines.dear as Record<string, unknown>).max_attempt_usd = 0.01; // reserved before it starts: $0.01
    fs.writeFileSync(config, JSON.stringify(withCap));
    const file = writeManifest(repo, { worktrees: true, max_parallel: 1, budget_usd: 0.005, tasks: [group('fix', 'dear')] });
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env });
    const s = state(home);
    const fix = byKey(s, 'fix');
    const rows = readRows(home);
    const distinguish = rows.filter((row) => row.step === 'distinguish');
    for (const row of distinguish) {
      assert.notEqual(row.verdict, 'PASS', JSON.stringify(row));
      assert.ok(!row.cost_microusd, `no cost: ${JSON.stringify(row)}`);
      if (row.worker_log && fs.existsSync(String(row.worker_log))) assert.doesNotMatch(fs.readFileSync(String(row.worker_log), 'utf8'), /INPUTS-ENGINE-RAN/);
    }
    assert.equal(s.spend?.spentMicroUsd ?? 0, 0, 'nothing spent: the script candidates are free and the inputs engine never ran');
    const said = `${r.all}\n${fix.reason ?? ''}\n${distinguish.map((row) => String(row.notes)).join('\n')}`;
    assert.match(said, /inputs engine dear\/dear-1 made no input: not started: .*budget/i, said);
    // Without inputs the three passing candidates behave alike: one group, decided without a split.
    assert.deepEqual(
      fix.consensus?.groups.map((g) => g.length),
      [3],
      JSON.stringify(fix),
    );
    assert.equal(fix.consensus?.inputs, 0);
    assert.ok(rows.filter((row) => row.step === 'work' && row.verdict === 'PASS').length === 3, r.all);
  });

  it("bad input is refused at load: the script engine, an unknown engine; an inputs engine that is every candidate's own warns", async () => {
    const dir = tempDir();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ inputs: { engine: 'script' }, probe: 'true' }, /tasks\[0\]\.distinguish\.inputs\.engine.*the script engine cannot write inputs/],
      [{ inputs: { engine: 'nosuch' }, probe: 'true' }, /tasks\[0\]\.distinguish\.inputs\.engine.*unknown inputs engine "nosuch"/],
      [{ inputs: { model: 'm' }, probe: 'true' }, /distinguish\.inputs/],
    ];
    for (const [distinguish, message] of cases) {
      const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('fix', 'true', 'true', { repeat: 2, select: 'consensus', distinguish })] });
      const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard']);
      assert.equal(r.exitCode, 2, r.all);
      assert.match(r.all.replace(/\n/g, ' '), message, JSON.stringify(distinguish));
      assert.match(r.all, /test\.swarm\.json:\d+:\d+/, 'the position in the file');
    }
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask('fix', 'true', 'test -e x', {
          engine: 'claude',
          repeat: 2,
          select: 'consensus',
          distinguish: { inputs: { engine: 'claude' }, probe: 'cat x' },
        }),
      ],
    });
    const lint = await cli(['lint', file]);
    assert.match(lint.all, /self-review.*This inputs engine is the engine and model of every candidate \(claude\)/);
  });
});
