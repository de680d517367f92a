import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { judgeSetupDeps, loadSetupDeps, recordSetupDeps, saveSetupDeps, setupDepsReason } from '../../extension/core/run/setup-deps';
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
      /^the worker changed or deleted what setup installed \(.*node_modules\/runner\/run\.sh.*\): .*change the manifest's setup/,
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
