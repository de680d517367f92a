import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  frozenManifestPath,
  lintFrozenManifest,
  loadAndLintFrozenManifest,
  loadFrozenManifest,
  writeFrozenManifest,
} from '../../extension/core/run/frozen-manifest';
import type { RunState } from '../../extension/core/live/state';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { ctx } from './lint-helpers';
import { lintManifestFile, lintParsed, loadManifest } from '../../extension/core/run/manifest';
import { WORKFLOW_SECTIONS } from '../../extension/core/run/workflows';

describe('a manifest is parsed once per run and handed on', () => {
  it('lint of the tree loadManifest parsed finds exactly what lint of the file finds', async () => {
    for (const name of fs.readdirSync(path.resolve('test/fixtures/manifests'))) {
      const file = path.resolve('test/fixtures/manifests', name);
      const { parsed } = loadManifest(file, { engines: new Set(ctx.engines.keys()) });
      const findings = await lintParsed(parsed, ctx);
      assert.deepEqual(findings, await lintManifestFile(file, ctx), name);
      assert.ok(findings.length > 0, `${name}: a fixture with findings, so the comparison means something`);
    }
  });

  it('lint reads what was loaded: a file rewritten after the load does not change the findings', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('a', 'true', 'true')] });
    const { parsed } = loadManifest(file, { engines: new Set(ctx.engines.keys()) });
    const before = await lintParsed(parsed, ctx);
    fs.writeFileSync(file, '{ "tasks": [ ');
    assert.deepEqual(await lintParsed(parsed, ctx), before);
    assert.ok(
      (await lintManifestFile(file, ctx)).some((f) => f.severity === 'error'),
      'the file itself now fails',
    );
  });

  it("the keys a manifest compiles to (a best-of-N task's candidates included) are the keys of its frozen copy, --only or not", () => {
    const dir = tempDir();
    const tasks = [scriptTask('a', 'true', 'true'), { ...scriptTask('b', 'true', 'true'), candidates: [{ engine: 'script' }, { engine: 'script' }] }];
    const { manifest } = loadManifest(writeManifest(dir, { workdir: 'w', tasks }));
    const home = path.join(dir, 'home');
    fs.mkdirSync(path.join(home, 'runs', 'r1'), { recursive: true });
    writeFrozenManifest(home, 'r1', manifest);
    manifest.tasks = manifest.tasks.filter((t) => t.key === 'a');
    const frozen = loadFrozenManifest(home, { runId: 'r1', manifestFile: manifest.file } as RunState, WORKFLOW_SECTIONS);
    assert.deepEqual(
      manifest.taskKeys,
      frozen.tasks.map((t) => t.key),
    );
    assert.ok((manifest.taskKeys ?? []).length > 3, 'the candidates are compiled keys too');
  });

  it('resume and rerun load and lint the frozen manifest from one parse: the same manifest and findings as two; the same error when it no longer loads', async () => {
    for (const name of fs.readdirSync(path.resolve('test/fixtures/manifests'))) {
      const file = path.resolve('test/fixtures/manifests', name);
      const { manifest } = loadManifest(file, { engines: new Set(ctx.engines.keys()) });
      const home = path.join(tempDir(), 'home');
      fs.mkdirSync(path.join(home, 'runs', 'r1'), { recursive: true });
      writeFrozenManifest(home, 'r1', manifest);
      const state = { runId: 'r1', manifestFile: manifest.file } as RunState;
      const once = await loadAndLintFrozenManifest(home, state, ctx);
      assert.deepEqual(once.manifest, loadFrozenManifest(home, state, WORKFLOW_SECTIONS, new Set(ctx.engines.keys())), name);
      assert.deepEqual(once.findings, await lintFrozenManifest(home, state, ctx), name);
    }
    const home = path.join(tempDir(), 'home');
    fs.mkdirSync(path.join(home, 'runs', 'r2'), { recursive: true });
    fs.writeFileSync(
      frozenManifestPath(home, 'r2'),
      JSON.stringify({ source: '/m.json', manifest: { workdir: 'w', tasks: [scriptTask('a', 'true', 'true'), scriptTask('a', 'true', 'true')] } }),
    );
    const state = { runId: 'r2', manifestFile: '/m.json' } as RunState;
    const twice = (() => {
      try {
        loadFrozenManifest(home, state, WORKFLOW_SECTIONS, new Set(ctx.engines.keys()));
      } catch (e) {
        return (e as Error).message;
      }
      return null;
    })();
    assert.match(twice ?? '', /no longer loads/);
    await assert.rejects(loadAndLintFrozenManifest(home, state, ctx), (e: Error) => e.message === twice);
  });
});
