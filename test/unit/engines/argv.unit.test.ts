import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { builtinEngines, expandArgv, findBinary, templateProblems, type ArgvValues, type EngineSpec } from '../../../engines';

const engines = builtinEngines();
const codex = engines.get('codex')!;
const values = (over: Partial<ArgvValues> = {}): ArgvValues => ({
  spec: 'Create alpha.txt',
  taskdir: '/work/t1',
  model: null,
  engineArgs: [],
  fullAccess: false,
  ...over,
});
const withArgv = (argv: EngineSpec['argv'], over: Partial<EngineSpec> = {}): EngineSpec => ({ ...codex, name: 'test', argv, ...over });

const NASTY_SPEC = `-x Fix "the bug" in it's file; $(rm -rf /) \`id\` {model} {taskdir} \\n\nsecond line`;

describe('expandArgv', () => {
  it('expands the codex template for a sandboxed task without a model', () => {
    assert.deepEqual(expandArgv(codex, values()), ['exec', '--json', '--skip-git-repo-check', '-s', 'workspace-write', '--', 'Create alpha.txt']);
  });

  it("nested in Verdict's sandbox: codex's own sandbox gets its nested options; as root Verdict's sandbox alone contains it", () => {
    const nested = [
      'exec',
      '--json',
      '--skip-git-repo-check',
      '-s',
      'workspace-write',
      '-c',
      'sandbox_workspace_write.exclude_slash_tmp=true',
      '--',
      'Create alpha.txt',
    ];
    assert.deepEqual(expandArgv(codex, values({ nested: true })), nested);
    assert.deepEqual(expandArgv(codex, values({ nested: true, root: true })), [
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '--',
      'Create alpha.txt',
    ]);
    // Only nested: a root run without Verdict's sandbox keeps codex's own.
    assert.deepEqual(expandArgv(codex, values({ root: true })), ['exec', '--json', '--skip-git-repo-check', '-s', 'workspace-write', '--', 'Create alpha.txt']);
    // An engine without rootNestedArgv is unchanged as root.
    const plain = withArgv(['{access}', '{spec}'], { sandboxArgv: ['--safe'], nestedSandboxArgv: ['--nested'], rootNestedArgv: undefined });
    assert.deepEqual(expandArgv(plain, values({ nested: true, root: true })), ['--safe', '--nested', 'Create alpha.txt']);
  });

  it('keeps the model group when a model is set and picks the full-access argv', () => {
    assert.deepEqual(expandArgv(codex, values({ model: 'gpt-5-codex', fullAccess: true })), [
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '-m',
      'gpt-5-codex',
      '--',
      'Create alpha.txt',
    ]);
  });

  it('uses the engine default model when the task names none', () => {
    const spec = withArgv([['-m', '{model}'], '{spec}'], { defaultModel: 'small-1' });
    assert.deepEqual(expandArgv(spec, values()), ['-m', 'small-1', 'Create alpha.txt']);
    assert.deepEqual(expandArgv(spec, values({ model: 'big-2' })), ['-m', 'big-2', 'Create alpha.txt']);
  });

  for (const [name, engine] of engines) {
    it(`${name}: a spec with spaces, quotes, $(rm -rf /) and placeholders stays exactly one element`, () => {
      const argv = expandArgv(engine, values({ spec: NASTY_SPEC }));
      const holding = argv.filter((a) => a.includes(NASTY_SPEC));
      assert.equal(holding.length, 1);
      assert.ok(holding[0] === NASTY_SPEC || holding[0] === `--prompt=${NASTY_SPEC}`, holding[0]);
      assert.ok(!argv.some((a) => a.includes('/work/t1') && a.includes('$(rm')), 'no placeholder expanded inside the spec');
    });
  }

  it('puts engine_args in place as zero or more elements, each kept whole', () => {
    const spec = withArgv(['run', '{engine_args}', '{spec}']);
    assert.deepEqual(expandArgv(spec, values()), ['run', 'Create alpha.txt']);
    assert.deepEqual(expandArgv(spec, values({ engineArgs: ['-c', 'model_reasoning_effort="high"', 'a b'] })), [
      'run',
      '-c',
      'model_reasoning_effort="high"',
      'a b',
      'Create alpha.txt',
    ]);
  });

  it('drops an optional group when any placeholder in it has no value, and fills {taskdir}', () => {
    const spec = withArgv(['--dir={taskdir}', ['--model', '{model}', '--in', '{taskdir}'], '{spec}']);
    assert.deepEqual(expandArgv(spec, values()), ['--dir=/work/t1', 'Create alpha.txt']);
    assert.deepEqual(expandArgv(spec, values({ model: 'm' })), ['--dir=/work/t1', '--model', 'm', '--in', '/work/t1', 'Create alpha.txt']);
  });

  it('throws on unknown placeholders, misplaced list placeholders and a required value that is missing', () => {
    assert.throws(() => expandArgv(withArgv(['{prompt}']), values()), /argv\[0\]: unknown placeholder \{prompt\}/);
    assert.throws(() => expandArgv(withArgv([['-x', '{modle}']]), values({ model: 'm' })), /argv\[0\]\[1\]: unknown placeholder \{modle\}/);
    assert.throws(() => expandArgv(withArgv(['--args={engine_args}']), values()), /\{engine_args\} must be a whole element/);
    assert.throws(() => expandArgv(withArgv([['{access}']]), values()), /must be a top-level element/);
    assert.throws(() => expandArgv(withArgv(['--model={model}', '{spec}']), values()), /argv\[0\] "--model=\{model\}" needs a value/);
  });

  it('every built-in template is valid', () => {
    for (const engine of engines.values()) assert.deepEqual(templateProblems(engine.argv), [], engine.name);
  });

  it('script: bash -c with the spec as the script', () => {
    assert.deepEqual(expandArgv(engines.get('script')!, values({ spec: 'echo hi > out.txt' })), ['-c', 'echo hi > out.txt']);
  });
});

describe('findBinary', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-bin-'));
    fs.mkdirSync(path.join(dir, 'a'));
    fs.mkdirSync(path.join(dir, 'b'));
    fs.writeFileSync(path.join(dir, 'a', 'tool'), 'not executable', { mode: 0o644 });
    fs.writeFileSync(path.join(dir, 'b', 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    fs.mkdirSync(path.join(dir, 'a', 'dironly'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('returns the first executable regular file on PATH, skipping non-executables and empty entries', () => {
    const pathEnv = ['', path.join(dir, 'a'), path.join(dir, 'b')].join(path.delimiter);
    assert.equal(findBinary('tool', pathEnv), path.join(dir, 'b', 'tool'));
  });

  it('returns null when missing, for a directory, and for an empty name', () => {
    assert.equal(findBinary('no-such-tool', path.join(dir, 'b')), null);
    assert.equal(findBinary('dironly', path.join(dir, 'a')), null);
    assert.equal(findBinary('', path.join(dir, 'b')), null);
  });

  it('checks a name with a slash as a path, ignoring PATH', () => {
    assert.equal(findBinary(path.join(dir, 'b', 'tool'), ''), path.join(dir, 'b', 'tool'));
    assert.equal(findBinary(path.join(dir, 'a', 'tool'), ''), null);
  });
});
