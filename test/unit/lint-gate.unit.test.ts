import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startGate, startGateLines } from '../../extension/core/manifest/lint';
import type { Finding } from '../../extension/core/manifest/findings';
import { LineIndex } from '../../extension/core/manifest/positions';
import { frozenManifestPath, lintFrozenManifest } from '../../extension/core/run/frozen-manifest';
import type { RunState } from '../../extension/core/live/state';
import { tempDir } from '../helpers/fixtures';
import { ctx, FILE, manifest, task } from './lint-helpers';
import { lintManifestText } from '../../extension/core/run/manifest';

const finding = (severity: Finding['severity'], rule: Finding['rule'] = 'check-cannot-fail'): Finding => ({
  rule,
  severity,
  message: 'm',
  file: FILE,
  range: new LineIndex('x').range(0, 1),
  taskKey: 'a',
});

/** The one rule every start applies (CLI, MCP, editor): core/manifest/lint.ts startGate. */
describe('startGate: lint errors refuse a start unless forced', () => {
  it('an error refuses; --force forces it; warnings and notes never refuse and force nothing', () => {
    assert.deepEqual(startGate([finding('warning'), finding('info')], false), { errors: [], refused: false, forced: false });
    assert.deepEqual(startGate([finding('warning')], true), { errors: [], refused: false, forced: false }, 'no error: nothing to force, the run is not marked');
    const e = finding('error');
    assert.deepEqual(startGate([finding('warning'), e], false), { errors: [e], refused: true, forced: false });
    assert.deepEqual(startGate([e], true), { errors: [e], refused: false, forced: true });
  });

  it('says what was refused, how to go on, and each error as file:line:column: error [rule] (task) message', () => {
    const gate = startGate([finding('error'), finding('error', 'allow-paths')], false);
    assert.deepEqual(startGateLines(gate, 'cannot start /m.swarm.json', { force: 'force: true' }), [
      'cannot start /m.swarm.json: 2 lint errors (fix them and lint again; force: true starts it anyway, recorded as forced: true in the run and every eval row):',
      `  ${FILE}:1:1: error [check-cannot-fail] (a) m`,
      `  ${FILE}:1:1: error [allow-paths] (a) m`,
    ]);
    assert.match(
      startGateLines(startGate([finding('error')], true), '--force: starting /m')[0] ?? '',
      /^--force: starting \/m despite 1 lint error \(recorded as forced: true/,
    );
  });
});

/** A resume runs the run's frozen manifest: lint it, and place every finding in runs/<run_id>/manifest.json. */
describe('lintFrozenManifest: findings at their place in the frozen file', () => {
  it('finds what lint finds in the manifest and names the frozen file at the same values (inside strings, property names)', async () => {
    const home = tempDir();
    const raw = { run_name: 't', tasks: [task('a', { check: 'npm test || true' }), { ...task('b', { check: 'true' }), colour: 'red' }] };
    const state = { runId: '20260101-000000-abcd', manifestFile: FILE } as RunState;
    const file = frozenManifestPath(home, state.runId);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // As writeFrozenManifest writes it (2-space JSON), with the `version` a planner's tasks add (generate.ts).
    fs.writeFileSync(file, JSON.stringify({ source: FILE, manifest: raw, version: 1 }, null, 2));
    const text = fs.readFileSync(file, 'utf8');
    const at = (needle: string) => new LineIndex(text).position(text.indexOf(needle));

    const found = await lintFrozenManifest(home, state, ctx);
    const direct = await lintManifestText(manifest(raw.tasks, { run_name: 't' }), FILE, ctx);
    assert.deepEqual(
      found.map((f) => [f.rule, f.severity, f.taskKey]).sort(),
      direct.map((f) => [f.rule, f.severity, f.taskKey]).sort(),
      'the same findings as the manifest itself',
    );
    assert.ok(found.every((f) => f.file === file));
    const swallow = found.find((f) => f.rule === 'check-cannot-fail' && f.taskKey === 'a');
    assert.deepEqual(swallow?.range?.start, at('|| true'), 'a range inside a string keeps its place in it');
    assert.equal(text.slice(swallow?.range?.offset, (swallow?.range?.offset ?? 0) + (swallow?.range?.length ?? 0)), '|| true');
    const trivial = found.find((f) => f.rule === 'check-cannot-fail' && f.taskKey === 'b');
    assert.deepEqual(trivial?.range?.start, at('"true"'));
    const unknown = found.find((f) => f.rule === 'unknown-field');
    assert.deepEqual(unknown?.range?.start, at('"colour"'), 'a property name');
  });

  it('a frozen manifest that cannot be read is one invalid-manifest error (a start refused, not run blind)', async () => {
    const home = tempDir();
    const state = { runId: '20260101-000000-dcba', manifestFile: FILE } as RunState;
    const found = await lintFrozenManifest(home, state, ctx);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.rule, 'invalid-manifest');
    assert.equal(found[0]?.severity, 'error');
    assert.equal(startGate(found, false).refused, true);
  });
});
