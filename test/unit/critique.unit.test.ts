import assert from 'node:assert/strict';
import { lineCount, parseCritiqueAnswer, proposalPath } from '../../extension/core/run/workflows/critique/verdict';
import { decideRound, newLoop, noChange, renderReport, revisionText, REVISION_BYTES } from '../../extension/core/run/workflows/critique/loop';
import type { CheckedCriticism } from '../../extension/core/run/workflows/critique/criticism';
import { critiquePrompt } from '../../extension/core/run/workflows/critique/prompt';
import { parseManifest } from '../../extension/core/run/manifest';
import { WORKFLOW_SECTIONS } from '../../extension/core/run/workflows';

const line = (file: string, n: number, verified = true): CheckedCriticism => ({
  file,
  line: n,
  claim: `${file} is wrong`,
  critic: 1,
  verified,
  evidence: verified ? `${file}:${n}: x` : 'the file is not in the sealed commit',
});
const command = (cmd: string): CheckedCriticism => ({ command: cmd, claim: 'fails', critic: 2, verified: true, evidence: 'exited 1: boom' });

describe("critique: reading a critic's answer", () => {
  it('takes the whole message or the last fenced block, each criticism as {file, line, claim} or {command, claim}', () => {
    const a = parseCritiqueAnswer(
      '{"criticisms": [{"file": "a.ts", "line": 3, "claim": "off by one"}, {"command": "npm test", "claim": "a test fails", "extra": 1}]}',
    );
    assert.deepEqual(a, {
      ok: true,
      answer: {
        criticisms: [
          { file: 'a.ts', line: 3, claim: 'off by one' },
          { command: 'npm test', claim: 'a test fails' },
        ],
      },
    });
    const fenced = parseCritiqueAnswer('I looked.\n```json\n{"criticisms": []}\n```\n');
    assert.deepEqual(fenced, { ok: true, answer: { criticisms: [] } });
  });

  it('refuses prose, a criticism with both a file and a command, one with neither, a line 0, and more than 20', () => {
    const bad = (m: string | null) => {
      const r = parseCritiqueAnswer(m);
      assert.equal(r.ok, false, String(m));
      return r.ok ? '' : r.error;
    };
    assert.match(bad(null), /no final message/);
    assert.match(bad('looks fine {"criticisms": []}'), /not JSON/);
    assert.match(
      bad('{"criticisms": [{"file": "a", "line": 1, "command": "x", "claim": "c"}]}'),
      /\/criticisms\/0 must be either \{file, line, claim\} or \{command, claim\}/,
    );
    assert.match(bad('{"criticisms": [{"claim": "vague"}]}'), /\/criticisms\/0 must be either/);
    assert.match(bad('{"criticisms": [{"file": "a", "line": 0, "claim": "c"}]}'), /critique-answer\.schema\.json/);
    assert.match(bad(JSON.stringify({ criticisms: Array.from({ length: 21 }, () => ({ command: 'false', claim: 'c' })) })), /must NOT have more than 20 items/);
    assert.match(bad('{"verdict": "approve", "concerns": []}'), /must have required property 'criticisms'/);
  });

  it('a criticised path must be relative, inside the proposal and not in .git; lines count as editors do', () => {
    assert.deepEqual(proposalPath('src/./a.ts'), { ok: true, rel: 'src/a.ts' });
    for (const [p, why] of [
      ['/etc/passwd', /absolute/],
      ['../x', /outside/],
      ['a/../../x', /outside/],
      ['.git/config', /inside \.git/],
      ['.', /names no file/],
      ['C:\\x', /absolute/],
    ] as const) {
      const r = proposalPath(p);
      assert.equal(r.ok, false, p);
      if (!r.ok) assert.match(r.why, why);
    }
    assert.deepEqual(['', 'a', 'a\n', 'a\nb', 'a\nb\n', '\n'].map(lineCount), [0, 1, 1, 2, 2, 1]);
  });
});

describe("critique: the loop's decisions", () => {
  const base = { revisions: 0, rounds: 2, elapsedMs: 0, timeLimitMs: null };
  it('no verified criticism stops with nothing unresolved; the round limit and the time limit stop with them unresolved; else a revision', () => {
    assert.deepEqual(decideRound({ ...base, verified: [] }), { kind: 'stop', why: 'no verified criticism remains', unresolved: [] });
    const v = [line('a.ts', 1)];
    assert.deepEqual(decideRound({ ...base, verified: v }), { kind: 'revise' });
    assert.deepEqual(decideRound({ ...base, verified: v, revisions: 2 }), { kind: 'stop', why: 'round limit: 2 revision(s) done', unresolved: v });
    assert.deepEqual(decideRound({ ...base, verified: v, elapsedMs: 60_000, timeLimitMs: 60_000 }), {
      kind: 'stop',
      why: 'time limit: 60 s reached',
      unresolved: v,
    });
    assert.deepEqual(decideRound({ ...base, verified: v, elapsedMs: 59_999, timeLimitMs: 60_000 }), { kind: 'revise' });
  });

  it('"no change": only a pending revision that sealed the tree it was asked to revise', () => {
    const loop = { ...newLoop(), pending: true, lastSealed: 'abc', revisions: 1, open: [line('a.ts', 1)] };
    assert.deepEqual(noChange(loop, 'abc'), {
      kind: 'stop',
      why: 'no change: revision 1 sealed the same tree as the proposal it revised',
      unresolved: loop.open,
    });
    assert.equal(noChange(loop, 'def'), null);
    assert.equal(noChange({ ...loop, pending: false }, 'abc'), null);
    assert.equal(noChange(loop, null), null);
  });

  it('the revision text names each verified point with its evidence, bounded; the report keeps every round, dropped ones with why', () => {
    const text = revisionText(1, [line('a.ts', 4), command('npm test')]);
    assert.match(text, /^Critique round 1:/);
    assert.match(text, /- a\.ts:4: a\.ts is wrong\n  evidence: a\.ts:4: x\n- `npm test`: fails\n  evidence: exited 1: boom/);
    const long = revisionText(
      1,
      Array.from({ length: 400 }, (_, i) => command(`check ${i} ${'x'.repeat(100)}`)),
    );
    assert.ok(Buffer.byteLength(long) < REVISION_BYTES + 1024, String(Buffer.byteLength(long)));
    assert.match(long, /\(cut\)/);
    const loop = {
      ...newLoop(),
      rounds: [
        {
          round: 1,
          attempt: 1,
          sealed: 'abcdef0123456789',
          criticisms: [line('a.ts', 4), line('gone.ts', 2, false)],
          criticErrors: ['critic 2 (x) gave no valid answer: not JSON'],
          decision: 'revision 1 asked',
        },
      ],
      stopped: 'no change: …',
      unresolved: [line('a.ts', 4)],
      dropped: 1,
    };
    const report = renderReport('t', loop);
    assert.match(
      report,
      /## Round 1 \(attempt 1, abcdef012345\)\n\n1 verified, 1 dropped \(pointed at nothing checkable\), 1 critic\(s\) gave no valid answer\. Then: revision 1 asked\./,
    );
    assert.match(report, /- critic 1, gone\.ts:2: gone\.ts is wrong\n  dropped: the file is not in the sealed commit/);
    assert.match(report, /Unresolved \(1\):\n- critic 1, a\.ts:4/);
    assert.match(report, /Dropped in all: 1\. The task's verdict is its check's\./);
  });

  it("the critic's prompt holds the work as data, the previous round's points, and the command rule with the check's limit", () => {
    const p = critiquePrompt({
      spec: 'S',
      check: 'npm test',
      verified: null,
      checkOutput: 'ok',
      material: { kind: 'the diff', text: '+x', truncated: false },
      materialFile: '/s/m.txt',
      taskDir: '/t',
      round: 2,
      previous: [line('a.ts', 4)],
      commandTimeoutS: 300,
    });
    assert.match(p, /This is round 2: the proposal is a revision that was handed these points[^\n]*\n- a\.ts:4: a\.ts is wrong/);
    assert.match(p, /<(work-[0-9a-f]{16})>\n\+x\n<\/\1>/);
    assert.match(p, /at most 300 s; it must exit non-zero on the proposal/);
  });
});

describe('critique: the manifest', () => {
  const manifest = (task: Record<string, unknown>) => JSON.stringify({ tasks: [{ key: 't', engine: 'codex', spec: 's', check: 'npm test', ...task }] });
  const problems = (task: Record<string, unknown>) =>
    parseManifest(manifest(task), '/m.swarm.json', { engines: new Set(['codex', 'claude', 'script']) }).problems.filter((p) => p.severity === 'error');

  it('loads critics, rounds (default 2) and the time limit', () => {
    const r = parseManifest(manifest({ critique: { critics: ['claude', { engine: 'codex', model: 'gpt-5' }], time_limit_s: 90 } }), '/m.swarm.json', {
      engines: new Set(['codex', 'claude']),
    });
    assert.deepEqual(r.manifest?.tasks[0]?.critique, {
      critics: [
        { engine: 'claude', model: null },
        { engine: 'codex', model: 'gpt-5' },
      ],
      rounds: 2,
      timeLimitMs: 90_000,
    });
  });

  it('refuses the script engine and unknown engines as critics, critique on best-of-N and on a planner, with positions', () => {
    assert.deepEqual(
      problems({ critique: { critics: ['script'] } }).map((p) => [p.code, p.path, p.range?.start.line]),
      [['schema', 'tasks[0].critique.critics[0]', 1]],
    );
    assert.match(problems({ critique: { critics: ['script'] } })[0]!.message, /the script engine cannot criticise/);
    assert.deepEqual(
      problems({ critique: { critics: ['nope'] } }).map((p) => [p.code, p.path]),
      [['unknown-engine', 'tasks[0].critique.critics[0]']],
    );
    assert.match(problems({ critique: { critics: ['nope'] } })[0]!.message, /unknown critic engine "nope"/);
    assert.deepEqual(
      problems({ repeat: 2, critique: { critics: ['claude'] } }).map((p) => [p.code, p.path]),
      [['critique', 'tasks[0].critique']],
    );
    assert.deepEqual(
      problems({ generate: { file: 'tasks.json', max_tasks: 2 }, critique: { critics: ['claude'] } }).map((p) => [p.code, p.path]),
      [['critique', 'tasks[0].critique']],
    );
    assert.deepEqual(
      problems({ critique: { critics: [], rounds: 0 } })
        .map((p) => p.path)
        .sort(),
      ['tasks[0].critique.critics', 'tasks[0].critique.rounds'],
    );
  });
});

describe('critique: lint', () => {
  it("self-review warns on a critic that is the task's own engine and model, at the entry; another model is fine", async () => {
    const { lintManifestText } = await import('../../extension/core/manifest/lint');
    const { builtinEngines } = await import('../../engines');
    const text = JSON.stringify(
      {
        tasks: [
          {
            key: 't',
            engine: 'codex',
            model: 'gpt-5',
            spec: 'Write a.ts',
            check: 'npm test',
            expect_files: ['a.ts'],
            task_type: 'x',
            verified: 'v',
            critique: { critics: [{ engine: 'codex', model: 'gpt-5' }, { engine: 'codex', model: 'o3' }, 'claude'] },
          },
        ],
      },
      null,
      2,
    );
    const findings = (await lintManifestText(text, '/m.swarm.json', { engines: builtinEngines(), useGit: false, sections: WORKFLOW_SECTIONS })).filter(
      (f) => f.rule === 'self-review',
    );
    assert.deepEqual(
      findings.map((f) => [f.severity, f.range?.start.line]),
      [['warning', 16]],
    );
    assert.match(findings[0]!.message, /This critic is the task's own engine and model \(codex\/gpt-5\)/);
  });
});
