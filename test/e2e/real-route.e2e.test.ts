import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, runRealTask, type RealRun } from '../helpers/real-engines';

// Routing by evidence with the real CLIs (docs/scoreboard.md "Routing"): `engine: "auto"` over the real codex and
// opencode against the scripted model server, from a seeded eval log in which codex is the cheaper proven model for
// parsers and opencode the only proven one for UI work. Each task's attempt must run the CLI auto chose, for real:
// the row credits that engine, holds the route it was chosen by, and the server saw that CLI's dialect.

const CODEX = 'codex:stub-model';
const OPENCODE = 'opencode:verdict-test/stub-model';

/** Seeded history: per (engine, model, task type), `tasks` past tasks of which `passed` passed first time, each at `cost` microUSD. */
function seedLog(home: string, history: [string, string, string, number, number, number][]): void {
  fs.mkdirSync(home, { recursive: true });
  const rows = history.flatMap(([engine, model, type, tasks, passed, cost]) =>
    [...Array(tasks).keys()].map((i) =>
      JSON.stringify({
        run_id: `seed-${engine}-${type}`,
        task_key: `t${i}`,
        attempt: 1,
        step: 'work',
        worker_engine: engine,
        model,
        task_type: type,
        verdict: i < passed ? 'PASS' : 'FAIL',
        cost_microusd: cost,
        duration_ms: 1000,
        ended_at: '2026-12-01T00:00:00.000Z',
      }),
    ),
  );
  fs.writeFileSync(path.join(home, 'runs.jsonl'), rows.join('\n') + '\n');
}

describe('engine "auto" with the real codex and opencode CLIs against the scripted model server', function () {
  this.timeout(600000);
  let run: RealRun;

  before(async () => {
    const binDirs = [await ensureCli('codex'), await ensureCli('opencode')];
    run = await runRealTask({
      engine: 'codex',
      model: 'stub-model',
      binDirs,
      alsoEngines: ['opencode'],
      mode: 'plain',
      name: 'real-route',
      manifest: { max_parallel: 2, route: { from: [CODEX, OPENCODE], prefer: 'cost', explore: 0, min_tasks: 3, seed: 'real' } },
      task: { engine: 'auto', model: undefined, task_type: 'parser' },
      moreTasks: [
        {
          key: 'beta',
          engine: 'auto',
          spec: "Create alpha.txt containing 'alpha ready'",
          check: "grep -x 'alpha ready' alpha.txt",
          expect_files: ['alpha.txt'],
          task_type: 'ui',
          verified: 'alpha.txt holds the line "alpha ready"',
          timeout_s: 240,
          max_attempts: 1,
        },
      ],
      prepareHome: async (home) =>
        seedLog(home, [
          ['codex', 'stub-model', 'parser', 5, 5, 1000],
          ['opencode', 'verdict-test/stub-model', 'parser', 5, 5, 5000],
          ['codex', 'stub-model', 'ui', 6, 0, 1000],
          ['opencode', 'verdict-test/stub-model', 'ui', 5, 5, 5000],
        ]),
    });
  });

  it('each task runs the engine auto chose for its type, for real: the cheaper proven codex for the parser, the only proven opencode for the UI task', () => {
    assert.equal(run.result.exitCode, 0, explainRun(run));
    const rows = run.rows.filter((r) => !String(r.run_id).startsWith('seed-'));
    const byKey = Object.fromEntries(rows.map((r) => [String(r.task_key), r]));
    assert.deepEqual(
      rows.map((r) => [r.task_key, r.verdict, r.worker_engine, r.model]).sort(),
      [
        ['alpha', 'PASS', 'codex', 'stub-model'],
        ['beta', 'PASS', 'opencode', 'verdict-test/stub-model'],
      ],
      explainRun(run),
    );
    const route = (key: string) => byKey[key]?.route as Record<string, any>;
    assert.equal(route('alpha').chosen, CODEX);
    assert.equal(route('alpha').runner_up.candidate, OPENCODE);
    assert.equal(route('alpha').line, 'auto → codex/stub-model (proven, $0.0010/PASS over 5 tasks)');
    assert.equal(route('beta').chosen, OPENCODE);
    assert.equal(route('beta').line, 'auto → opencode/verdict-test/stub-model (proven, $0.0050/PASS over 5 tasks)');
    for (const key of ['alpha', 'beta']) {
      assert.equal(route(key).exploration, false);
      assert.equal(route(key).seed, `real/${key}/1`);
    }
    // Each CLI spoke its own dialect to the server: codex the Responses API, opencode Chat Completions.
    const apis = new Set(run.server.requests.map((q) => q.api));
    assert.ok(apis.has('responses') && apis.has('chat'), [...apis].join(', '));
    // Every token the server sent is on exactly one of the two rows.
    const sent = run.server.usageSent;
    assert.equal(
      rows.reduce((n, r) => n + Number(r.tokens_in), 0),
      sent.input,
      explainRun(run),
    );
    assert.equal(
      rows.reduce((n, r) => n + Number(r.tokens_out), 0),
      sent.output,
    );
    for (const key of ['alpha', 'beta']) assert.equal(fs.readFileSync(path.join(run.dir, 'work', key, 'alpha.txt'), 'utf8'), 'alpha ready\n');
  });
});
