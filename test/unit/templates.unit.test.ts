import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  freeManifestName,
  listTemplates,
  manifestEngines,
  planTemplate,
  templateEnginesLine,
  writeTemplate,
  type Template,
} from '../../extension/core/manifest/templates';
import { tempDir } from '../helpers/fixtures';
import { ctx } from './lint-helpers';
import { lintManifestFile, loadManifest } from '../../extension/core/run/manifest';

/** templates/ (docs/workflows.md): every template loads and lints without an error, warning or note. */
describe('templates/', () => {
  const templates = listTemplates(path.resolve('templates'));

  it('holds the patterns that pay, each a folder with a manifest and a README', () => {
    assert.deepEqual(
      templates.map((t) => t.id),
      [
        'best-of-n',
        'best-of-n-consensus',
        'code-review',
        'council',
        'critique-loop',
        'docs-sweep',
        'fan-out',
        'generated',
        'migration',
        'model-bakeoff',
        'no-model',
        'phases',
        'ranked',
        'research',
        'test-hardening',
        'validated',
      ],
    );
    for (const t of templates) assert.ok(t.readme, `${t.id} has a README.md`);
  });

  it('says which engines each template needs: every place a manifest names one, the default engine for a task naming none', () => {
    const text = JSON.stringify({
      review: { engines: ['gemini'] },
      tasks: [
        { key: 'a' },
        { key: 'b', engine: 'script', fallback: [{ engine: 'opencode' }], critique: { critics: ['grok'] } },
        {
          key: 'c',
          engine: 'x',
          phases: { implement: { engine: 'claude' }, test: { engine: 'y' } },
          council: { members: [{ engine: 'm' }], chair: { engine: 'ch' } },
        },
      ],
    });
    assert.deepEqual(manifestEngines(text), ['ch', 'claude', 'codex', 'gemini', 'grok', 'm', 'opencode', 'script', 'x', 'y']);
    assert.deepEqual(manifestEngines('not json'), []);
    const byId = new Map(templates.map((t) => [t.id, t]));
    assert.equal(templateEnginesLine(byId.get('no-model') as Template), 'runs with no model (script engine)');
    assert.equal(templateEnginesLine(byId.get('fan-out') as Template), 'needs codex');
    assert.equal(
      templateEnginesLine(byId.get('code-review') as Template, (e) => e === 'codex'),
      'needs claude (not installed), codex, gemini (not installed)',
    );
  });

  for (const t of templates) {
    it(`${t.id} loads and, written into a repository, lints clean but for the files the project must bring`, async () => {
      assert.ok(loadManifest(t.manifest, { engines: new Set(ctx.engines.keys()) }).manifest.tasks.length > 0);
      const dir = tempDir();
      fs.mkdirSync(path.join(dir, '.git'));
      writeTemplate(t, dir, planTemplate(t, dir));
      const findings = await lintManifestFile(path.join(dir, t.files[0] as string), ctx);
      assert.deepEqual(
        findings.filter((x) => x.rule !== 'check-file-missing').map((x) => `${x.severity} ${x.rule}: ${x.message}`),
        [],
      );
      // The code and tests the template works on are the user's (its README says so); what it ships is never missing.
      for (const f of findings) assert.ok(!t.files.includes(/names (\S+),/.exec(f.message)?.[1] ?? ''), `${t.id} ships the file: ${f.message}`);
      if (t.id === 'no-model') assert.deepEqual(findings, [], 'the no-model template brings everything its checks name');
    });

    it(`${t.id}: its README says when to use it, what to change and how the check proves the work`, () => {
      const text = fs.readFileSync(t.readme as string, 'utf8');
      for (const h of ['## When to use it', '## What to change', '## How the check proves the work'])
        assert.ok(text.includes(`\n${h}\n`), `${t.id}/README.md lacks "${h}"`);
      assert.ok(t.description.length >= 40 && t.description.length <= 160, `${t.id}: the one-line description is ${t.description.length} characters`);
    });

    it(`${t.id}: no task runs on the script engine (but in no-model, where every task does) and every check script it names ships with it`, () => {
      const { manifest } = loadManifest(t.manifest, { engines: new Set(ctx.engines.keys()) });
      assert.equal(t.engines.length === 1 && t.engines[0] === 'script', t.id === 'no-model', `${t.id}: engines ${t.engines.join(', ')}`);
      for (const task of manifest.tasks) {
        if (t.id === 'no-model') continue;
        assert.notEqual(task.engine, 'script', `${t.id}: ${task.key}`);
        for (const m of (task.check ?? '').matchAll(/bash (checks\/[\w.-]+)/g))
          assert.ok(t.files.includes(m[1] as string), `${t.id}: ${m[1]} is not in the template`);
      }
    });
  }
});

describe('templates: writing one into a folder', () => {
  const t = listTemplates(path.resolve('templates')).find((x) => x.id === 'test-hardening') as Template;

  it('writes the manifest and its support files, not the README, keeping the bytes', () => {
    const dir = tempDir();
    const plan = planTemplate(t, dir);
    assert.deepEqual(plan.conflicts, []);
    const written = writeTemplate(t, dir, plan);
    assert.deepEqual(
      written.map((f) => path.relative(dir, f)),
      ['test-hardening.swarm.json', 'checks/mutants.sh', 'checks/mutants.txt'],
    );
    assert.ok(!fs.existsSync(path.join(dir, 'README.md')));
    assert.ok(fs.readFileSync(path.join(dir, 'checks/mutants.sh')).equals(fs.readFileSync(path.join(t.root, 'checks/mutants.sh'))));
  });

  it('never overwrites: a manifest or support file with other contents is a conflict and nothing is written; identical support files are kept', () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'checks'));
    fs.writeFileSync(path.join(dir, 'checks/mutants.txt'), 's/mine/theirs/\n');
    fs.copyFileSync(path.join(t.root, 'checks/mutants.sh'), path.join(dir, 'checks/mutants.sh'));
    fs.writeFileSync(path.join(dir, 'test-hardening.swarm.json'), '{"mine": true}');
    const plan = planTemplate(t, dir);
    assert.deepEqual(plan.conflicts, ['test-hardening.swarm.json', 'checks/mutants.txt']);
    assert.deepEqual(plan.same, ['checks/mutants.sh']);
    assert.throws(() => writeTemplate(t, dir, plan), /test-hardening\.swarm\.json, .*checks\/mutants\.txt already exist/);
    assert.equal(fs.readFileSync(path.join(dir, 'test-hardening.swarm.json'), 'utf8'), '{"mine": true}');
    assert.equal(fs.readFileSync(path.join(dir, 'checks/mutants.txt'), 'utf8'), 's/mine/theirs/\n');
  });

  it('a new manifest name: the first free one; a symlink in the way counts as taken and is never followed', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'test-hardening.swarm.json'), '{}');
    const outside = path.join(tempDir(), 'victim');
    fs.symlinkSync(outside, path.join(dir, 'test-hardening-2.swarm.json'));
    const name = freeManifestName(t, dir);
    assert.equal(name, 'test-hardening-3.swarm.json');
    const written = writeTemplate(t, dir, planTemplate(t, dir, name));
    assert.equal(path.basename(written[0] as string), name);
    assert.ok(!fs.existsSync(outside), 'nothing written through the link');
    assert.deepEqual(planTemplate(t, dir, 'test-hardening-2.swarm.json').conflicts, ['test-hardening-2.swarm.json']);
  });

  it('a file that appears between plan and write is not overwritten (exclusive create)', () => {
    const dir = tempDir();
    const plan = planTemplate(t, dir);
    fs.mkdirSync(path.join(dir, 'checks'));
    fs.writeFileSync(path.join(dir, 'checks/mutants.sh'), 'mine');
    assert.throws(() => writeTemplate(t, dir, plan), /EEXIST/);
    assert.equal(fs.readFileSync(path.join(dir, 'checks/mutants.sh'), 'utf8'), 'mine');
  });

  it('reads the single-file shape too: a templates/<id>.swarm.jsonc whose leading comment is the description', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'council.swarm.jsonc'), '// Council: several models answer. Then a chair.\n{"tasks": []}\n');
    fs.mkdirSync(path.join(dir, 'not-a-template'));
    fs.writeFileSync(path.join(dir, 'not-a-template', 'notes.md'), 'x');
    assert.deepEqual(
      listTemplates(dir).map((x) => [x.id, x.description, x.files]),
      [['council', 'Council: several models answer.', ['council.swarm.jsonc']]],
    );
    assert.deepEqual(listTemplates(path.join(dir, 'missing')), []);
  });
});
