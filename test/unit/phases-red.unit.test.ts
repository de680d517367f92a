import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bindSource, bwrapCommand } from '../../extension/core/process/sandbox';
import { putBack, redPassedReason } from '../../extension/core/run/workflows/phases/red';
import { failureText } from '../../extension/core/run/prompt';
import { findingsOf, manifest as lintManifest, task as lintTask } from './lint-helpers';
import { parseManifest } from '../../extension/core/run/manifest';

// Red before green (docs/workflows.md "Phases"): the pure parts — what the test phase is told to run without, how the
// red copy is bound at the task dir's path, how a phase file is put back, and the lint warning when it is turned off.

const engines = new Set(['codex', 'claude', 'script']);
const manifest = (test: Record<string, unknown>) =>
  JSON.stringify({
    worktrees: true,
    tasks: [
      {
        key: 'util',
        engine: 'codex',
        spec: 'Write {file}.',
        check: 'node --check {file}',
        phases: { files: ['src/a.mjs', 'src/b.mjs'], test: { engine: 'claude', check: 'node --test test/', ...test } },
      },
    ],
  });

describe('phases: red before green', () => {
  it('the test phase carries its phase files and their implement tasks; the implement tasks carry none', () => {
    const m = parseManifest(manifest({}), '/m.swarm.json', { engines }).manifest!;
    assert.deepEqual(
      m.tasks.map((t) => [t.key, t.red]),
      [
        ['util--impl-1', undefined],
        ['util--impl-2', undefined],
        [
          'util',
          [
            { file: 'src/a.mjs', implement: 'util--impl-1' },
            { file: 'src/b.mjs', implement: 'util--impl-2' },
          ],
        ],
      ],
    );
  });

  it('"red": false leaves it out, and lint warns at the false (rule phases-red-off); true or absent does not warn', async () => {
    assert.equal(parseManifest(manifest({ red: false }), '/m.swarm.json', { engines }).manifest!.tasks[2]!.red, undefined);
    const off = lintManifest([
      lintTask('util', { engine: 'codex', phases: { files: ['a.mjs'], test: { engine: 'claude', check: 'node --test', red: false } } }),
    ]);
    const found = await findingsOf('phases-red-off', off);
    assert.equal(found.length, 1);
    assert.equal(found[0]!.severity, 'warning');
    assert.equal(off.slice(found[0]!.range!.offset, found[0]!.range!.offset + found[0]!.range!.length), 'false');
    assert.match(found[0]!.message, /pass without the implementation/);
    const on = lintManifest([lintTask('util', { engine: 'codex', phases: { files: ['a.mjs'], test: { engine: 'claude', check: 'node --test', red: true } } })]);
    assert.deepEqual(await findingsOf('phases-red-off', on), []);
  });

  it('the retry is told that its tests passed without the code, and whose output it sees', () => {
    const text = failureText({
      attempt: 1,
      verdict: 'FAIL',
      check: 'bash t.sh',
      checkExitCode: 0,
      checkOutput: 'ok',
      workerTail: '',
      reason: redPassedReason('bash t.sh', ['a.sh']),
      redFiles: ['a.sh'],
    });
    assert.match(text, /ran again on the same tree without the implementation \(a\.sh as they were before it was written\) and passed there too/);
    assert.match(text, /Its exit code on the tree without the implementation was 0\./);
    const plain = failureText({
      attempt: 1,
      verdict: 'FAIL',
      check: 'bash t.sh',
      checkExitCode: 1,
      checkOutput: 'x',
      workerTail: '',
      reason: 'the check exited 1',
    });
    assert.doesNotMatch(plain, /without the implementation/);
  });

  it('the reason names the check and the files', () => {
    assert.equal(
      redPassedReason('bash t.sh', ['a.sh', 'b.sh']),
      'the tests pass without the implementation: `bash t.sh` exited 0 on the tree without a.sh, b.sh (each put back as it was before its implement task ran); tests must fail when the code they test is missing',
    );
  });
});

describe('sandbox: a folder shown at another path (substitute)', () => {
  it('bindSource maps the folder and what is inside it, and nothing else (not a sibling sharing its prefix)', () => {
    const sub = [{ source: '/home/u/.verdict/runs/r/tasks/t/check-tree/tree', at: '/w/t' }];
    assert.equal(bindSource(sub, '/w/t'), '/home/u/.verdict/runs/r/tasks/t/check-tree/tree');
    assert.equal(bindSource(sub, '/w/t/src/a.mjs'), '/home/u/.verdict/runs/r/tasks/t/check-tree/tree/src/a.mjs');
    assert.equal(bindSource(sub, '/w/t2'), '/w/t2');
    assert.equal(bindSource(sub, '/w'), '/w');
    assert.equal(bindSource([], '/w/t'), '/w/t');
  });

  it("bwrap binds the copy at the task dir's path, and a read-only file from the copy (left out when the copy lacks it)", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'red-bind-'));
    const task = path.join(root, 'task');
    const copy = path.join(root, 'copy');
    for (const d of [task, copy]) fs.mkdirSync(d);
    for (const f of ['kept.txt', 'gone.txt']) fs.writeFileSync(path.join(task, f), 'x');
    fs.writeFileSync(path.join(copy, 'kept.txt'), 'x');
    const { args } = bwrapCommand(
      {
        binary: 'bwrap',
        writable: [task],
        network: false,
        readOnly: [path.join(task, 'kept.txt'), path.join(task, 'gone.txt')],
        substitute: [{ source: copy, at: task }],
      },
      task,
      'bash',
      ['-c', 'true'],
    );
    const line = args.join(' ');
    assert.ok(line.includes(`--bind ${copy} ${task}`), line);
    assert.ok(line.includes(`--ro-bind ${path.join(copy, 'kept.txt')} ${path.join(task, 'kept.txt')}`), line);
    assert.ok(!line.includes('gone.txt'), 'a file the copy lacks is not bound in from the real dir');
    assert.ok(!line.includes(`--bind ${task} ${task}`), 'the real task dir is not bound');
    assert.deepEqual(args.slice(args.indexOf('--chdir'), args.indexOf('--chdir') + 2), ['--chdir', task], "the working directory is the task dir's path");
    fs.rmSync(root, { recursive: true, force: true });
  });
});

describe('putBack: a phase file as it was before its implementation', () => {
  let dir: string;
  const old = new Date('2020-01-02T03:04:05Z');
  beforeEach(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'red-put-')));
    fs.mkdirSync(path.join(dir, 'src', 'deep'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'src', 'deep', 'a.mjs'), 'implementation');
    fs.writeFileSync(path.join(dir, 'src', 'b.mjs'), 'implementation');
    for (const d of [path.join(dir, 'src', 'deep'), path.join(dir, 'src'), dir]) fs.utimesSync(d, old, old);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('absent at the start: removed, with the folders that only held it; the folders left keep their times', () => {
    putBack(dir, 'src/deep/a.mjs', null);
    assert.equal(fs.existsSync(path.join(dir, 'src', 'deep')), false);
    assert.equal(fs.readFileSync(path.join(dir, 'src', 'b.mjs'), 'utf8'), 'implementation');
    assert.equal(fs.statSync(path.join(dir, 'src')).mtimeMs, old.getTime(), 'its folder still reads as it did');
    assert.equal(fs.statSync(dir).mtimeMs, old.getTime());
  });

  it("there at the start: its content and mode come back; its times and its folders' times stay", () => {
    fs.utimesSync(path.join(dir, 'src', 'b.mjs'), old, old);
    fs.utimesSync(path.join(dir, 'src'), old, old);
    putBack(dir, 'src/b.mjs', { kind: 'file', content: Buffer.from('stub'), mode: 0o755 });
    const st = fs.statSync(path.join(dir, 'src', 'b.mjs'));
    assert.equal(fs.readFileSync(path.join(dir, 'src', 'b.mjs'), 'utf8'), 'stub');
    assert.equal(st.mode & 0o777, 0o755);
    assert.equal(st.mtimeMs, old.getTime());
    assert.equal(fs.statSync(path.join(dir, 'src')).mtimeMs, old.getTime());
  });

  it('a read-only folder (an inputs copy) is opened for the change and read-only again after; a path out of the dir is refused', () => {
    fs.chmodSync(path.join(dir, 'src'), 0o555);
    putBack(dir, 'src/b.mjs', null);
    assert.equal(fs.existsSync(path.join(dir, 'src', 'b.mjs')), false);
    assert.equal(fs.statSync(path.join(dir, 'src')).mode & 0o777, 0o555);
    fs.chmodSync(path.join(dir, 'src'), 0o755);
    assert.throws(() => putBack(dir, '../x', null), /outside the task dir/);
  });

  it('a folder on the way that the worker made a symbolic link out of the tree is refused: nothing outside is written, removed or chmodded', () => {
    // The test phase's worker seals `src` as a link to a folder of the orchestrator's user; the red run's putBack runs in
    // the orchestrator, unsandboxed: through the link it wrote the phase file's start content there, or removed it.
    const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'red-outside-')));
    try {
      fs.writeFileSync(path.join(outside, 'b.mjs'), 'mine');
      fs.chmodSync(outside, 0o500);
      fs.rmSync(path.join(dir, 'src'), { recursive: true });
      fs.symlinkSync(outside, path.join(dir, 'src'));
      assert.throws(
        () => putBack(dir, 'src/b.mjs', { kind: 'file', content: Buffer.from('stub'), mode: 0o644 }),
        /src on the way to src\/b\.mjs is not a folder/,
      );
      assert.throws(() => putBack(dir, 'src/b.mjs', null), /not a folder/);
      assert.throws(() => putBack(dir, 'src/new/c.mjs', { kind: 'file', content: Buffer.from('stub'), mode: 0o644 }), /not a folder/);
      assert.equal(fs.readFileSync(path.join(outside, 'b.mjs'), 'utf8'), 'mine');
      assert.deepEqual(fs.readdirSync(outside), ['b.mjs']);
      assert.equal(fs.statSync(outside).mode & 0o777, 0o500, 'its mode untouched');
    } finally {
      fs.chmodSync(outside, 0o700);
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });
});
