import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { manifestEngines } from '../../extension/core/manifest/templates';
import { preflight, PreflightError } from '../../extension/core/run/preflight';
import { workflowReaderEngines } from '../../extension/core/run/workflows';
import { builtinEngines } from '../../engines';
import { CASE_FILE_BYTES, readCases } from '../../extension/core/run/workflows/best-of-n/cases';
import { inputsPrompt, inputsRow, type InputsRecord } from '../../extension/core/run/workflows/best-of-n/inputs-record';
import type { ValidateFunction } from 'ajv';
import { validateEvalRow } from '../../schemas/generated/validateEvalRow.js';
import { tempDir } from '../helpers/fixtures';
import { FILE, ctx, findingsOf, manifest, task } from './lint-helpers';
import { parseManifest } from '../../extension/core/run/manifest';

const engines = new Set(ctx.engines.keys());

describe('consensus: an inputs folder as read (cases.ts)', () => {
  it('regular files only, by name, the first `max`; links, folders and large files left out and said once per kind', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'b'), '2');
    fs.writeFileSync(path.join(dir, 'a'), '1');
    fs.writeFileSync(path.join(dir, 'c'), '3');
    fs.symlinkSync('/etc/passwd', path.join(dir, '0-passwd'));
    fs.symlinkSync(dir, path.join(dir, '0-tree'));
    fs.mkdirSync(path.join(dir, '0-folder'));
    fs.writeFileSync(path.join(dir, '0-big'), Buffer.alloc(CASE_FILE_BYTES + 1, 55));
    const r = readCases(dir, 2, 'the inputs folder');
    assert.deepEqual([r.any, r.inputs, r.given], [true, ['1', '2'], 3]);
    assert.deepEqual(r.notes, [
      'the inputs folder: 3 entries are not a regular file (a link, a folder or a special file): left out (0-folder, 0-passwd, 0-tree)',
      `the inputs folder: 1 file(s) hold more than ${CASE_FILE_BYTES} bytes: left out (0-big)`,
    ]);
    assert.deepEqual(readCases(tempDir(), 5, 'x'), { any: false, inputs: [], given: 0, notes: [] });
  });
});

describe('consensus: the inputs engine in the manifest', () => {
  it('distinguish.inputs as {engine, model} loads as an EngineChoice; the template list names it; a command stays a string', async () => {
    const text = manifest([task('fix', { repeat: 2, select: 'consensus', distinguish: { inputs: { engine: 'claude', model: 'opus' }, probe: 'cat x' } })]);
    const m = parseManifest(text, FILE, { engines }).manifest;
    assert.ok(m);
    assert.deepEqual(m.tasks[0]?.distinguish?.inputs, { engine: 'claude', model: 'opus' });
    assert.ok(manifestEngines(text).includes('claude'));
    const command = manifest([task('fix', { engine: 'codex', repeat: 2, select: 'consensus', distinguish: { inputs: 'echo a', probe: 'cat x' } })]);
    assert.deepEqual(manifestEngines(command), ['codex']);
  });

  it("the run's preflight refuses an inputs engine whose binary is not on PATH, on a pool run too (it runs on the orchestrator's machine)", async () => {
    // Before, the preflight named critics and ranking reviewers but not the inputs engine: the run started, the inputs
    // engine failed to spawn, and the group fell back to the first to pass (no consensus, said only in the select row).
    const dir = tempDir();
    const m = parseManifest(
      JSON.stringify({
        workdir: 'w',
        tasks: [
          {
            key: 'fix',
            engine: 'script',
            spec: 'true',
            check: 'true',
            repeat: 2,
            select: 'consensus',
            distinguish: { inputs: { engine: 'claude' }, probe: 'cat x' },
          },
        ],
      }),
      path.join(dir, 'm.json'),
    ).manifest;
    assert.ok(m);
    // PATH holds bash (the script engine's binary) and nothing named claude.
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.symlinkSync('/bin/bash', path.join(bin, 'bash'));
    const policy = { sandbox: 'off' as const, allowFullAccess: false, configSource: 'test' };
    for (const enginesElsewhere of [false, true])
      await assert.rejects(
        preflight(m, builtinEngines(), { PATH: bin }, path.join(dir, 'home'), { ...policy, enginesElsewhere }, workflowReaderEngines),
        (e: Error) => {
          assert.ok(e instanceof PreflightError);
          assert.deepEqual(e.problems.length, 1, e.message);
          assert.match(e.message, /^engine "claude" needs the `claude` command, which is not on PATH/);
          return true;
        },
      );
    // A command as the inputs: no engine to find.
    const command = parseManifest(
      JSON.stringify({
        workdir: 'w',
        tasks: [
          { key: 'fix', engine: 'script', spec: 'true', check: 'true', repeat: 2, select: 'consensus', distinguish: { inputs: 'echo a', probe: 'cat x' } },
        ],
      }),
      path.join(dir, 'm.json'),
    ).manifest;
    assert.ok(command);
    await preflight(command, builtinEngines(), { PATH: bin }, path.join(dir, 'home'), policy, workflowReaderEngines);
  });

  it('self-review warns when every candidate runs on the inputs engine and model, not when one does not', async () => {
    const same = manifest([task('fix', { engine: 'codex', repeat: 2, select: 'consensus', distinguish: { inputs: { engine: 'codex' }, probe: 'cat x' } })]);
    const found = await findingsOf('self-review', same);
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /^This inputs engine is the engine and model of every candidate \(codex\)/);
    const mixed = manifest([
      task('fix', {
        candidates: [{ engine: 'codex' }, { engine: 'claude' }],
        select: 'consensus',
        distinguish: { inputs: { engine: 'codex' }, probe: 'cat x' },
      }),
    ]);
    assert.deepEqual(await findingsOf('self-review', mixed), []);
  });
});

describe('consensus: the inputs engine prompt and row (inputs-record.ts)', () => {
  it('the prompt holds the task, check, probe, the folder and each solution under its name, cut to its share', () => {
    const p = inputsPrompt({
      spec: 'Write double.sh',
      check: 'bash double.sh 3',
      probe: 'bash double.sh "$VERDICT_CASE"',
      maxInputs: 7,
      folder: '/s/inputs',
      material: { dir: '/s/material', files: ['A.diff', 'B.diff'] },
      work: [
        { name: 'A', text: 'diff A' },
        { name: 'B', text: 'x\n'.repeat(80_000) },
      ],
    });
    assert.match(p, /^You are writing test inputs for 2 solutions \(A, B\)/);
    assert.match(p, /working directory \(\/s\/inputs\).*At most 7 are used/);
    assert.match(p, /<task>\nWrite double\.sh\n<\/task>/);
    assert.match(p, /```sh\nbash double\.sh "\$VERDICT_CASE"\n```/);
    assert.match(p, /Some are cut here; the whole of each is also in \/s\/material \(read-only\): A\.diff, B\.diff\./);
    assert.match(p, /<solution-[0-9a-f]{16} name="A">\ndiff A\n<\/solution-[0-9a-f]{16}>/);
    assert.ok(Buffer.byteLength(p) < 120 * 1024);
  });

  it('its row: step distinguish on the group, credited to the engine, PASS / ERROR / CANCELLED, valid against the schema', () => {
    const rec: InputsRecord = {
      engine: 'claude',
      harness: 'claude',
      model: 'opus',
      startedAt: 1_000,
      endedAt: 3_500,
      receipt: null,
      usage: null,
      costMicroUsd: 1200,
      given: 4,
      error: null,
      cancelled: false,
    };
    const c = {
      runId: '20261206-170000-abcd',
      runName: 'r',
      identity: 'me',
      host: 'h',
      taskKey: 'fix',
      spec: 's',
      taskType: 't',
      branch: null,
      sandbox: 'bwrap' as const,
      round: 2,
      dir: '/records/consensus-2',
      names: { A: 3, B: 1 },
    };
    const row = inputsRow(c, rec);
    assert.deepEqual(
      [row.step, row.task_key, row.group, row.candidate, row.attempt, row.verdict, row.worker_engine, row.model, row.cost_microusd, row.duration_ms, row.notes],
      ['distinguish', 'fix', 'fix', null, 2, 'PASS', 'claude', 'opus', 1200, 2500, 'wrote 4 input(s) for A (candidate 3), B (candidate 1)'],
    );
    const validate = validateEvalRow as ValidateFunction;
    assert.ok(validate(row), JSON.stringify(validate.errors));
    assert.equal(inputsRow(c, { ...rec, error: 'it wrote no file' }).verdict, 'ERROR');
    assert.equal(inputsRow(c, { ...rec, error: 'stopped', cancelled: true }).verdict, 'CANCELLED');
  });
});
