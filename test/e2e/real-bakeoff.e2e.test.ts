import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { ensureCli, type AgentCliName } from '../helpers/agent-clis';
import { engineEnv, ISOLATED, startVerdict } from '../helpers/real-engines';
import { git, makeRepo, readRows, tempDir } from '../helpers/fixtures';
import { CLI } from '../helpers/cli';
import { startModelServer, type ModelServer, type RecordedRequest } from '../fixtures/model-server';

// The model-bakeoff template run by `verdict run` on the four real agent CLIs the tests install (codex, Claude Code,
// Gemini CLI, opencode), all against one scripted model server: each task's tool call writes a correct module, so
// every candidate PASSes its task's real node --test check. The scoreboard (`verdict models`) must then hold one row
// per engine's model per task type, with exactly the tokens the server sent to that engine for that task.

const CSV =
  "export function parseCsv(text) {\n  const rows = [];\n  let row = [], f = '', q = false;\n  for (let i = 0; i < text.length; i++) {\n    const c = text[i];\n    if (q) { if (c === '\"' && text[i + 1] === '\"') { f += '\"'; i++; } else if (c === '\"') q = false; else f += c; }\n    else if (c === '\"') q = true;\n    else if (c === ',') { row.push(f); f = ''; }\n    else if (c === '\\n' || c === '\\r') { if (c === '\\r' && text[i + 1] === '\\n') i++; row.push(f); rows.push(row); row = []; f = ''; }\n    else f += c;\n  }\n  if (f !== '' || row.length) { row.push(f); rows.push(row); }\n  return rows;\n}";
const INTERVALS =
  "export function mergeIntervals(list) {\n  for (const [a, b] of list) if (a > b) throw new RangeError('bad pair ' + a + ',' + b);\n  const s = [...list].sort((x, y) => x[0] - y[0]);\n  const out = [];\n  for (const [a, b] of s) { const l = out[out.length - 1]; if (l && a <= l[1]) l[1] = Math.max(l[1], b); else out.push([a, b]); }\n  return out;\n}";
const nodeTest = (imports: string, body: string) =>
  `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n${imports}\ntest('works', () => {\n${body}\n});\n`;

/** The model each engine's candidate names, and the wire dialect it speaks to the server. */
const ENGINES: Record<Exclude<AgentCliName, 'grok'>, { model: string; api: RecordedRequest['api'] }> = {
  codex: { model: 'stub-model', api: 'responses' },
  claude: { model: 'claude-sonnet-4-5', api: 'messages' },
  gemini: { model: 'gemini-2.5-flash', api: 'gemini' },
  opencode: { model: 'verdict-test/stub-model', api: 'chat' },
};
const TASKS = {
  'csv-parser': { file: 'src/csv.mjs', type: 'bakeoff-parser' },
  'interval-merge': { file: 'src/intervals.mjs', type: 'bakeoff-algorithm' },
} as const;
const taskOf = (body: unknown): keyof typeof TASKS | null => {
  const text = JSON.stringify(body);
  return text.includes('src/csv.mjs') ? 'csv-parser' : text.includes('src/intervals.mjs') ? 'interval-merge' : null;
};

describe(`the model-bakeoff template on codex, claude, gemini and opencode (${ISOLATED ? 'loopback-only network namespace' : 'not isolated'})`, function () {
  this.timeout(600000);
  let server: ModelServer;
  let home: string;
  let repo: string;
  let result: Awaited<ReturnType<Awaited<ReturnType<typeof startVerdict>>['done']>>;
  let rows: Record<string, unknown>[];

  before(async function () {
    this.timeout(600000);
    const names = Object.keys(ENGINES) as Array<keyof typeof ENGINES>;
    const binDirs = await Promise.all(names.map((n) => ensureCli(n)));
    server = await startModelServer({
      file: (body) => TASKS[taskOf(body) ?? 'csv-parser'].file,
      content: (body) => (taskOf(body) === 'interval-merge' ? INTERVALS : CSV),
    });
    const dir = tempDir('verdict-bakeoff-');
    home = path.join(dir, 'verdict-home');
    repo = makeRepo(path.join(dir, 'repo'), {
      'README.md': '# bakeoff\n',
      'src/.keep': '',
      'test/csv.test.mjs': nodeTest(
        "import { parseCsv } from '../src/csv.mjs';",
        "  assert.deepEqual(parseCsv('a,\"b,c\"\\r\\n1,2\\n'), [['a', 'b,c'], ['1', '2']]);",
      ),
      'test/intervals.test.mjs': nodeTest(
        "import { mergeIntervals } from '../src/intervals.mjs';",
        '  assert.deepEqual(mergeIntervals([[2, 3], [1, 2], [5, 6]]), [[1, 3], [5, 6]]);\n  assert.throws(() => mergeIntervals([[3, 1]]), RangeError);',
      ),
    });
    const init = await execa('node', [CLI, 'init', '--template', 'model-bakeoff', '--dir', repo], { reject: false });
    assert.equal(init.exitCode, 0, String(init.stderr));
    const file = path.join(repo, 'model-bakeoff.swarm.json');
    // As the template's README says: name the models to compare (here the ones the server answers for each engine).
    const manifest = JSON.parse(fs.readFileSync(file, 'utf8')) as { tasks: Array<{ candidates: Array<{ engine: keyof typeof ENGINES; model?: string }> }> };
    for (const t of manifest.tasks) for (const c of t.candidates) c.model = ENGINES[c.engine].model;
    fs.writeFileSync(file, JSON.stringify(manifest, null, 2));
    const env: Record<string, string> = {
      ...Object.assign({}, ...names.map((n) => engineEnv(n, dir, server))),
      PATH: [...binDirs, process.env.PATH ?? ''].join(path.delimiter),
      PWD: dir,
    };
    try {
      result = await (await startVerdict(['run', file, '--home', home, '--identity', 'bakeoff-e2e'], { cwd: dir, env, server })).done();
    } finally {
      await server.close();
    }
    rows = readRows(home);
  });

  it("every candidate of every engine PASSes its task's real check, each row credited to its engine and model", () => {
    assert.equal(result.exitCode, 0, String(result.all));
    const work = rows.filter((r) => r.step === 'work');
    const got = work.map((r) => [r.group, r.worker_engine, r.model, r.verdict]).sort((a, b) => String(a).localeCompare(String(b)));
    const want = Object.keys(TASKS)
      .flatMap((t) => Object.entries(ENGINES).map(([e, { model }]) => [t, e, model, 'PASS']))
      .sort((a, b) => String(a).localeCompare(String(b)));
    assert.deepEqual(got, want, String(result.all));
    for (const t of Object.keys(TASKS)) assert.ok(git(repo, 'rev-parse', `verdict/${String(rows[0]?.run_id)}/${t}`), `${t}'s branch is at its winner`);
  });

  it("the scoreboard has one row per engine's model per task type, with exactly the tokens the server sent it", async () => {
    const models = await execa('node', [CLI, 'models', '--json', '--home', home], { reject: false });
    assert.equal(models.exitCode, 0, String(models.stderr));
    const board = (
      JSON.parse(String(models.stdout)) as {
        view: { rows: Array<{ model: string; task_type: string; tasks: number; passed: number; median_tokens: number | null }> };
      }
    ).view;
    for (const [task, { type }] of Object.entries(TASKS)) {
      const rowsOfType = board.rows.filter((r) => r.task_type === type);
      assert.deepEqual(
        rowsOfType.map((r) => r.model).sort(),
        Object.values(ENGINES)
          .map((e) => e.model)
          .sort(),
        `one scoreboard row per engine for ${type}`,
      );
      for (const [engine, { model, api }] of Object.entries(ENGINES)) {
        const sent = server.requests
          .filter((q) => q.api === api && q.usage && taskOf(q.body) === task)
          .reduce((n, q) => n + (q.usage?.input ?? 0) + (q.usage?.output ?? 0), 0);
        const row = rowsOfType.find((r) => r.model === model);
        assert.ok(sent > 0, `${engine} was called for ${task}`);
        assert.deepEqual(
          [row?.tasks, row?.passed, row?.median_tokens],
          [1, 1, sent],
          `${engine} (${model}) on ${task}: one task, passed, every token the server sent it`,
        );
      }
    }
    // And nothing the server sent is missing from the eval log.
    const total = server.requests.reduce((n, q) => n + (q.usage ? q.usage.input + q.usage.output : 0), 0);
    assert.equal(
      rows.filter((r) => r.step === 'work').reduce((n, r) => n + Number(r.worker_tokens), 0),
      total,
    );
  });
});
