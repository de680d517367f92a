import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { judgeSetupDeps, loadSetupDeps, recordSetupDeps, saveSetupDeps, setupDepsReason } from '../../extension/core/run/setup-deps';
import { putBackJudged, sealedDir } from '../../extension/core/run/check-writes';
import { tempDir } from '../helpers/fixtures';

/** A plain task dir as setup left it: a runner in node_modules (with a .bin link), a venv, and the worker's source. */
function prepared(): string {
  const dir = path.join(tempDir(), 'task dir é');
  for (const d of ['node_modules/runner', 'node_modules/.bin', '.venv/bin', 'src']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  fs.writeFileSync(path.join(dir, 'node_modules/runner/run.sh'), 'for t in tests/*.sh; do bash "$t" || exit 1; done\n');
  fs.symlinkSync('../runner/run.sh', path.join(dir, 'node_modules/.bin/runtests'));
  fs.writeFileSync(path.join(dir, '.venv/bin/pytest'), '#!/bin/sh\nexec python -m pytest "$@"\n');
  fs.writeFileSync(path.join(dir, 'src/app.js'), 'module.exports = 1;\n');
  return dir;
}

describe("setup's dependency folders in plain mode (run/setup-deps.ts)", () => {
  it('records what setup installed; an untouched tree is judged clean, and the record survives save and load', () => {
    const dir = prepared();
    const deps = recordSetupDeps(dir);
    assert.ok(deps);
    assert.deepEqual(deps.roots, ['.venv', 'node_modules']);
    assert.ok(deps.entries.has('node_modules/runner/run.sh') && deps.entries.has('node_modules/.bin/runtests'));
    assert.equal(
      [...deps.entries.keys()].some((k) => k.startsWith('src')),
      false,
      "the worker's source is not setup's dependency",
    );
    const file = path.join(tempDir(), 'setup-deps.json');
    saveSetupDeps(file, deps);
    assert.deepEqual(loadSetupDeps(file), deps);
    // The worker edits its source only.
    fs.writeFileSync(path.join(dir, 'src/app.js'), 'module.exports = 2;\n');
    assert.deepEqual(judgeSetupDeps(dir, deps, path.join(tempDir(), 'aside')), { changed: [], moved: [], unmoved: [] });
    assert.equal(recordSetupDeps(path.join(tempDir())), null, 'no dependency folder: nothing recorded');
  });

  it('a rewritten runner, a relinked .bin entry and a deleted venv file are named; the reason says what to do', () => {
    const dir = prepared();
    const deps = recordSetupDeps(dir)!;
    fs.writeFileSync(path.join(dir, 'node_modules/runner/run.sh'), 'echo all passed\n');
    fs.rmSync(path.join(dir, 'node_modules/.bin/runtests'));
    fs.symlinkSync('/bin/true', path.join(dir, 'node_modules/.bin/runtests'));
    fs.rmSync(path.join(dir, '.venv/bin/pytest'));
    const j = judgeSetupDeps(dir, deps, path.join(tempDir(), 'aside'));
    assert.deepEqual(j.changed.sort(), ['.venv/bin/pytest', 'node_modules/.bin/runtests', 'node_modules/runner/run.sh']);
    assert.match(
      setupDepsReason(j.changed),
      /^the work changed, deleted or shadowed what setup installed \(.*node_modules\/runner\/run\.sh.*\): .*change the manifest's setup/,
    );
  });

  it("what setup's folders did not hold, and a new dependency folder elsewhere, is moved aside whole, never lost", () => {
    const dir = prepared();
    const deps = recordSetupDeps(dir)!;
    // A file that shadows runner/ for require('runner'), a whole new package, and a tests/node_modules.
    fs.writeFileSync(path.join(dir, 'node_modules/runner.js'), 'process.exit(0)\n');
    fs.mkdirSync(path.join(dir, 'node_modules/evil/lib'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'node_modules/evil/lib/x.js'), '1\n');
    fs.mkdirSync(path.join(dir, 'tests/node_modules/assert'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'tests/node_modules/assert/index.js'), 'module.exports = () => {};\n');
    const aside = path.join(tempDir(), 'aside');
    const j = judgeSetupDeps(dir, deps, aside);
    assert.deepEqual(j.changed, [], 'adding beside setup does not change what setup left');
    assert.deepEqual(j.moved.sort(), ['node_modules/evil', 'node_modules/runner.js', 'tests/node_modules']);
    for (const rel of j.moved) assert.equal(fs.existsSync(path.join(dir, rel)), false, `${rel} is out of the task dir`);
    assert.equal(fs.readFileSync(path.join(aside, 'tests/node_modules/assert/index.js'), 'utf8'), 'module.exports = () => {};\n');
    assert.equal(fs.readFileSync(path.join(aside, 'node_modules/runner.js'), 'utf8'), 'process.exit(0)\n');
    assert.deepEqual(judgeSetupDeps(dir, deps, aside), { changed: [], moved: [], unmoved: [] }, 'judged again: clean');
  });

  it("node_modules replaced by a link, or deleted and made again, is a change of setup's", () => {
    const dir = prepared();
    const deps = recordSetupDeps(dir)!;
    fs.renameSync(path.join(dir, 'node_modules'), path.join(dir, 'mine'));
    fs.symlinkSync('mine', path.join(dir, 'node_modules'));
    assert.ok(judgeSetupDeps(dir, deps, path.join(tempDir(), 'a')).changed.includes('node_modules'));
    const again = prepared();
    const deps2 = recordSetupDeps(again)!;
    const copy = path.join(tempDir(), 'nm');
    fs.cpSync(path.join(again, 'node_modules'), copy, { recursive: true, verbatimSymlinks: true });
    fs.rmSync(path.join(again, 'node_modules'), { recursive: true });
    fs.cpSync(copy, path.join(again, 'node_modules'), { recursive: true, verbatimSymlinks: true });
    assert.ok(judgeSetupDeps(again, deps2, path.join(tempDir(), 'b')).changed.includes('node_modules/runner/run.sh'), 'same bytes, new inode');
  });
});

describe("setup's dependency folders in plain mode: shadows, links, caches", () => {
  it("a new top-level module named like one in setup's site-packages, and a package.json taking a node_modules package's name, are shadows", () => {
    const dir = path.join(tempDir(), 'task');
    for (const d of [
      '.venv/lib/python3.11/site-packages/pytest',
      '.venv/lib/python3.11/site-packages/pytest-8.0.dist-info',
      'node_modules/verify-answer',
      'tests',
    ])
      fs.mkdirSync(path.join(dir, d), { recursive: true });
    fs.writeFileSync(path.join(dir, '.venv/lib/python3.11/site-packages/six.py'), '');
    fs.writeFileSync(path.join(dir, 'package.json'), '{"name": "my-app"}');
    const deps = recordSetupDeps(dir)!;
    fs.writeFileSync(path.join(dir, 'app.py'), ''); // the work: not a package setup installed
    assert.deepEqual(judgeSetupDeps(dir, deps, path.join(tempDir(), 'a')).changed, []);
    fs.mkdirSync(path.join(dir, 'pytest'));
    fs.writeFileSync(path.join(dir, 'pytest/__main__.py'), 'raise SystemExit(0)\n');
    fs.writeFileSync(path.join(dir, 'six.py'), '');
    fs.writeFileSync(path.join(dir, 'tests/package.json'), '{"name": "verify-answer", "exports": "./ok.js"}');
    assert.deepEqual(judgeSetupDeps(dir, deps, path.join(tempDir(), 'b')).changed.sort(), [
      'pytest (shadows pytest)',
      'six.py (shadows six)',
      'tests/package.json (its name shadows verify-answer)',
    ]);
    // The root package.json renamed after a dependency is one too; kept as setup left it, it is not.
    fs.rmSync(path.join(dir, 'pytest'), { recursive: true });
    fs.rmSync(path.join(dir, 'six.py'));
    fs.rmSync(path.join(dir, 'tests/package.json'));
    fs.writeFileSync(path.join(dir, 'package.json'), '{"name": "verify-answer"}');
    assert.deepEqual(judgeSetupDeps(dir, deps, path.join(tempDir(), 'c')).changed, ['package.json (its name shadows verify-answer)']);
  });

  it("a link named node_modules is a new dependency folder (moved aside); vendor/ is setup's; caches are nobody's", () => {
    const dir = path.join(tempDir(), 'task');
    for (const d of ['node_modules/.cache/babel', 'vendor/bin', 'shadow/verify-answer', 'tests']) fs.mkdirSync(path.join(dir, d), { recursive: true });
    fs.writeFileSync(path.join(dir, 'node_modules/.cache/babel/x.json'), '{}');
    fs.writeFileSync(path.join(dir, 'vendor/bin/run.sh'), 'exit 1\n');
    const deps = recordSetupDeps(dir)!;
    assert.deepEqual(deps.roots, ['node_modules', 'vendor']);
    assert.equal(
      [...deps.entries.keys()].some((k) => k.includes('.cache')),
      false,
      'a cache is not recorded',
    );
    fs.symlinkSync('../shadow', path.join(dir, 'tests/node_modules'));
    fs.writeFileSync(path.join(dir, 'vendor/bin/run.sh'), 'exit 0\n');
    fs.writeFileSync(path.join(dir, 'node_modules/.cache/babel/x.json'), '{"poisoned": true}');
    const aside = path.join(tempDir(), 'aside');
    const j = judgeSetupDeps(dir, deps, aside);
    assert.deepEqual(j.changed, ['vendor/bin/run.sh']);
    assert.deepEqual(j.moved.sort(), ['node_modules/.cache', 'tests/node_modules']);
    assert.equal(fs.readlinkSync(path.join(aside, 'tests/node_modules')), '../shadow');
  });

  it("putBackJudged judges the dependency folders again after a passing step: setup's changed is a failure naming the step, the work's own changed too, what is new moved", () => {
    const dir = path.join(tempDir(), 'task');
    fs.mkdirSync(path.join(dir, 'node_modules/runner'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'node_modules/runner/run.sh'), 'run the tests\n');
    fs.writeFileSync(path.join(dir, 'answer.sh'), 'echo 42\n');
    const deps = recordSetupDeps(dir)!;
    const sealed = sealedDir(dir, path.join(tempDir(), 'run'));
    fs.writeFileSync(path.join(dir, 'node_modules/runner/run.sh'), 'echo all passed\n');
    fs.writeFileSync(path.join(dir, 'node_modules/extra.js'), '');
    const setup = putBackJudged(dir, sealed, 'the check', { record: deps, aside: path.join(tempDir(), 'a'), whose: 'setup' });
    assert.match(String(setup.failure), /^while the check ran, the work changed, deleted or shadowed what setup installed \(node_modules\/runner\/run\.sh\)/);
    assert.match(String(setup.note), /after the check, moved out of the check's sight, into .*: node_modules\/extra\.js/);
    const own = putBackJudged(dir, sealed, 'the suite', { record: recordSetupDeps(dir)!, aside: path.join(tempDir(), 'b'), whose: 'work' });
    assert.equal(own.failure, null, 'nothing changed since that record');
    const record = recordSetupDeps(dir)!;
    fs.appendFileSync(path.join(dir, 'node_modules/runner/run.sh'), 'and rewrite myself\n');
    assert.match(
      String(putBackJudged(dir, sealed, 'the check', { record, aside: path.join(tempDir(), 'c'), whose: 'work' }).failure),
      /^the check passed, but it changed node_modules\/runner\/run\.sh in the work's own dependency folders, which the seal keeps no copy of/,
    );
  });
});
