import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { compileWorkflows, sectionEngines, sectionProblems, type WorkflowSection } from '../../extension/core/manifest/sections';
import { WORKFLOW_SECTIONS, WORKFLOWS } from '../../extension/core/run/workflows';
import type { TaskSpec } from '../../extension/core/manifest/types';
import { parseManifest } from '../../extension/core/run/manifest';

const spec = (key: string): TaskSpec => ({ key, spec: 's', check: 'true' }) as unknown as TaskSpec;

describe('workflow sections: the loader reaches every workflow through the one workflow table (run/workflows/index.ts)', () => {
  it('registers every workflow section of a task, from the workflows of the table, in its order', () => {
    assert.deepEqual(
      WORKFLOW_SECTIONS.map((s) => s.name),
      ['best-of-N', 'generate', 'validate', 'council', 'phases', 'critique'],
    );
    assert.deepEqual(
      WORKFLOW_SECTIONS,
      WORKFLOWS.flatMap((w) => (w.section ? [w.section] : [])),
    );
  });

  it('each workflow is one folder run/workflows/<name>/: its plugin (index.ts) and its section (section.ts) beside each other, and no workflow code left in the manifest layer', () => {
    const root = path.resolve('extension', 'core', 'run', 'workflows');
    const folders = fs
      .readdirSync(root, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    assert.deepEqual(folders, ['best-of-n', 'council', 'critique', 'generate', 'phases', 'validate']);
    for (const folder of folders) {
      const index = fs.readFileSync(path.join(root, folder, 'index.ts'), 'utf8');
      assert.ok(fs.existsSync(path.join(root, folder, 'section.ts')), `${folder}/section.ts`);
      assert.match(index, /section: \w+Section/, `${folder}/index.ts registers its section`);
    }
    assert.equal(WORKFLOWS.length, folders.length);
    // The manifest layer holds the section contract and the loader's functions over a list, no workflow of its own.
    assert.deepEqual(fs.readdirSync(path.resolve('extension', 'core', 'manifest', 'sections')).sort(), [
      'engine-ref.ts',
      'index.ts',
      'section.ts',
      'shared.ts',
    ]);
  });

  it('parseManifest names no workflow: its engine checks and problems come from the table', () => {
    const text = fs.readFileSync(path.resolve('extension', 'core', 'manifest', 'load.ts'), 'utf8');
    // parseManifest and the checks it calls, which follow it up to loadManifest.
    const start = text.indexOf('export function parseManifest(');
    const end = text.indexOf('export function loadManifest(', start);
    assert.ok(start >= 0 && end > start);
    const body = text.slice(start, end);
    assert.ok(body.includes('sectionEngines(') && body.includes('sectionProblems('));
    assert.doesNotMatch(body, /\.(validate|council|phases|critique|critics|candidates|rank|repeat|generate)\b/);
    assert.doesNotMatch(body, /(repeat|generate|validate|council|phases|critique)Problems/);
  });

  it('a section in the table is compiled, its problems reported under its code and its engines listed; a task none compiles stays as it is', () => {
    const twice: WorkflowSection = {
      name: 'twice',
      code: 'repeat',
      problems: (tasks) => tasks.flatMap((t, i) => ((t as Record<string, unknown>).twice === 0 ? [{ path: ['tasks', i, 'twice'], message: 'zero' }] : [])),
      engines: (t) => (typeof t.twice === 'number' ? [{ kind: 'writer', at: ['twice'], name: 'e', who: 'the second' }] : []),
      compile: (s, raw) => (raw.twice ? [s, { ...s, key: `${s.key}--2` }] : null),
    };
    const out = compileWorkflows([spec('a'), spec('b')], [{ twice: 1 }, {}], { worktrees: false }, [twice]);
    assert.deepEqual(
      out.map((t) => t.key),
      ['a', 'a--2', 'b'],
    );
    assert.deepEqual(sectionProblems([{ twice: 0 }], { existingKeys: new Set(), defaultEngine: 'codex' }, [twice]), [
      { code: 'repeat', problem: { path: ['tasks', 0, 'twice'], message: 'zero' } },
    ]);
    assert.deepEqual(sectionEngines({ twice: 1 }, [twice]), [{ kind: 'writer', at: ['twice'], name: 'e', who: 'the second' }]);
  });

  it('the loader checks the engines every registered section names: writers unknown, readers unknown or the script engine', () => {
    const manifest = JSON.stringify({
      workdir: '.',
      tasks: [
        { key: 'v', spec: 's', check: 'true', engine: 'codex', validate: { engine: 'nosuch-v', engines: [{ engine: 'codex' }, { engine: 'codex' }] } },
        {
          key: 'p',
          spec: 's',
          check: 'true',
          engine: 'codex',
          phases: { files: ['a.txt'], implement: { engine: 'codex' }, test: { engine: 'nosuch-t', check: 'true' }, review: { engines: ['script'] } },
        },
        { key: 'c', spec: 's', check: 'true', engine: 'codex', critique: { critics: ['nosuch-c'] } },
        { key: 'b', spec: 's', check: 'true', engine: 'codex', candidates: [{ engine: 'codex' }, { engine: 'nosuch-b' }] },
      ],
    });
    const { problems } = parseManifest(manifest, '/x/m.swarm.json', { engines: new Set(['codex', 'claude', 'script']) });
    const engines = problems.filter((p) => p.code === 'unknown-engine' || /script engine/.test(p.message)).map((p) => p.path);
    assert.deepEqual(engines, [
      'tasks[0].validate.engine',
      'tasks[1].phases.test.engine',
      'tasks[1].phases.review.engines[0]',
      'tasks[2].critique.critics[0]',
      'tasks[3].candidates[1].engine',
    ]);
  });
});
