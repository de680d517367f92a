import assert from 'node:assert/strict';
import { builtinEngines } from '../../engines/index';
import { ctx, FILE, manifest, task } from './lint-helpers';
import { lintManifestText, parseManifest } from '../../extension/core/run/manifest';

const engines = new Set(builtinEngines().keys());
const ROUTE = { from: ['codex:gpt-5-mini', 'claude:claude-haiku-4-5'], prefer: 'cost', explore: 0.1, min_tasks: 3 };

describe('engine "auto" in the manifest: the route block parsed and checked with positions', () => {
  it('a task on auto gets the route and the first candidate until routed; the run-level engine default applies to tasks that name none', () => {
    const text = manifest([task('a', { engine: 'auto' }), task('b'), task('c', { engine: 'script', model: undefined })], {
      run_name: 't',
      engine: 'auto',
      route: ROUTE,
    });
    const { manifest: m, problems } = parseManifest(text, FILE, { engines });
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    const [a, b, c] = m!.tasks;
    assert.deepEqual(a!.route?.from, [
      { id: 'codex:gpt-5-mini', engine: 'codex', model: 'gpt-5-mini' },
      { id: 'claude:claude-haiku-4-5', engine: 'claude', model: 'claude-haiku-4-5' },
    ]);
    assert.equal(a!.engine, 'codex');
    assert.equal(a!.model, 'gpt-5-mini');
    assert.deepEqual(
      { prefer: a!.route?.prefer, explore: a!.route?.explore, minTasks: a!.route?.minTasks, seed: a!.route?.seed, source: a!.route?.source },
      { prefer: 'cost', explore: 0.1, minTasks: 3, seed: null, source: 'manifest' },
    );
    assert.ok(b!.route, 'the run default "auto" routes a task that names no engine');
    assert.equal(c!.route, undefined);
    assert.equal(c!.engine, 'script');
  });

  it('the config\'s route applies when the manifest has none (source "config")', () => {
    const { manifest: m, problems } = parseManifest(manifest([task('a', { engine: 'auto' })]), FILE, { engines, route: ROUTE });
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    assert.equal(m!.tasks[0]!.route?.source, 'config');
  });

  const bad: { name: string; run: Record<string, unknown>; over?: Record<string, unknown>; path: string; message: RegExp; line: number }[] = [
    {
      name: 'no route anywhere',
      run: { run_name: 't' },
      over: { engine: 'auto' },
      path: 'tasks[0].engine',
      message: /engine "auto" needs a route block/,
      line: 4,
    },
    { name: 'empty from', run: { run_name: 't', route: { from: [] } }, over: { engine: 'auto' }, path: 'route.from', message: /route\.from is empty/, line: 2 },
    {
      name: 'unknown engine in from',
      run: { run_name: 't', route: { from: ['codex:gpt-5-mini', 'nosuch:m'] } },
      over: { engine: 'auto' },
      path: 'route.from[1]',
      message: /unknown engine "nosuch" in route\.from\[1\]/,
      line: 2,
    },
    {
      name: 'explore above 1',
      run: { run_name: 't', route: { from: ['codex:gpt-5-mini'], explore: 1.5 } },
      over: { engine: 'auto' },
      path: 'route.explore',
      message: /^must be <= 1, got 1\.5/,
      line: 2,
    },
    {
      name: 'explore below 0',
      run: { run_name: 't', route: { from: ['codex:gpt-5-mini'], explore: -0.1 } },
      over: { engine: 'auto' },
      path: 'route.explore',
      message: /^must be >= 0, got -0\.1/,
      line: 2,
    },
    {
      name: 'a model beside auto',
      run: { run_name: 't', route: ROUTE },
      over: { engine: 'auto', model: 'gpt-5' },
      path: 'tasks[0].model',
      message: /has its model picked by route\.from/,
      line: 4,
    },
    {
      name: 'fallback beside auto',
      run: { run_name: 't', route: ROUTE },
      over: { engine: 'auto', fallback: ['claude'] },
      path: 'tasks[0].fallback',
      message: /routes its retries itself/,
      line: 4,
    },
  ];
  for (const c of bad) {
    it(`error with its position: ${c.name}`, () => {
      const { manifest: m, problems } = parseManifest(manifest([task('a', c.over)], c.run), FILE, { engines });
      const p = problems.find((x) => x.path === c.path);
      assert.ok(p, JSON.stringify(problems.map((x) => `${x.path}: ${x.message}`)));
      assert.equal(p.severity, 'error');
      assert.match(p.message, c.message);
      assert.equal(p.range?.start.line, c.line);
      assert.equal(m, null);
    });
  }

  it('lint: a candidate whose engine is not installed is a warning at its entry; a task type without evidence for any candidate is an info "auto will explore"', async () => {
    const text = manifest([task('a', { engine: 'auto', task_type: 'parser' }), task('b', { engine: 'auto', task_type: 'ui' })], {
      run_name: 't',
      route: ROUTE,
    });
    const found = await lintManifestText(text, FILE, {
      ...ctx,
      pathEnv: '/nonexistent',
      routeEvidence: (model, type) => model === 'gpt-5-mini' && type === 'parser',
    });
    const route = found.filter((f) => f.rule === 'route');
    assert.deepEqual(
      route.map((f) => [f.severity, f.range?.start.line]),
      [
        ['warning', 2],
        ['warning', 2],
        ['info', 5],
      ],
      JSON.stringify(route),
    );
    assert.match(route[0]!.message, /route\.from names "codex:gpt-5-mini", whose engine's command `codex` is not on PATH/);
    assert.match(route[2]!.message, /^auto will explore: no candidate of route\.from has a judged task of task type "ui"/);
    assert.equal(route[2]!.taskKey, 'b');
  });
});
