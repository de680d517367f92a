import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { SPEC, assertRange, col, ctx, findingsOf, manifest, task } from './lint-helpers';
import { lintManifestText } from '../../extension/core/run/manifest';

/** The spec, file, run-shape, engine and metadata rules. */
const WT = { run_name: 't', worktrees: true };

describe('lint: worker-commits', () => {
  const commitSpec = `${SPEC} When you are done, commit your changes and push to origin.`;

  it('trips in worktree mode on "commit your changes", pointing at those words', async () => {
    const t = task('a', { spec: commitSpec });
    const text = manifest([t], WT);
    const found = await findingsOf('worker-commits', text);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'warning');
    assertRange(text, found[0], 4, col(t, 'commit your changes'), 'commit your changes');
    assert.match(found[0]?.message ?? '', /orchestrator commits/);
  });

  it('trips on `git commit` in a script spec', async () => {
    const t = task('a', { engine: 'script', spec: 'echo hi > a.txt\ngit add -A && git commit -qm wip' });
    const text = manifest([t], WT);
    assertRange(text, (await findingsOf('worker-commits', text))[0], 4, col(t, 'git commit'), 'git commit');
  });

  it('does not trip in plain mode, nor when the spec says not to commit', async () => {
    assert.deepEqual(await findingsOf('worker-commits', manifest([task('a', { spec: commitSpec })])), []);
    const polite = `${SPEC} Do not commit or push your changes; the orchestrator commits after the check.`;
    assert.deepEqual(await findingsOf('worker-commits', manifest([task('a', { spec: polite })], WT)), []);
  });
});

describe('lint: underspecified-spec', () => {
  it('trips on a spec under 80 characters, pointing at the whole spec', async () => {
    const t = task('a', { spec: 'Fix the CSV parser.' });
    const text = manifest([t]);
    const found = await findingsOf('underspecified-spec', text);
    assert.equal(found.length, 1);
    assertRange(text, found[0], 4, col(t, '"Fix the CSV parser."'), '"Fix the CSV parser."');
    assert.match(found[0]?.message ?? '', /19 characters/);
  });

  it('trips on a spec that only points at another file, even a long one', async () => {
    const spec = 'Follow the instructions in docs/tasks/csv-parser-quoted-fields.md and make sure everything passes.';
    assert.ok(spec.length >= 80);
    const found = await findingsOf('underspecified-spec', manifest([task('a', { spec })]));
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /only points at another file/);
  });

  it('does not trip on a full spec, nor on a short script spec', async () => {
    assert.deepEqual(await findingsOf('underspecified-spec', manifest([task('a')])), []);
    const mentionsDoc = `${SPEC} Follow the style of docs/style.md for naming, and keep every exported function documented with its shapes.`;
    assert.deepEqual(await findingsOf('underspecified-spec', manifest([task('a', { spec: mentionsDoc })])), []);
    assert.deepEqual(await findingsOf('underspecified-spec', manifest([task('a', { engine: 'script', spec: 'touch a.txt' })])), []);
  });
});

describe('lint: deliverable-lost', () => {
  it('trips on an absolute expected file and on one that leaves the task dir, pointing at the entry', async () => {
    const t = task('a', { expect_files: ['csv.ts', '/tmp/out.json', '../shared/out.txt'] });
    const text = manifest([t]);
    const found = await findingsOf('deliverable-lost', text);
    assert.equal(found.length, 2);
    assertRange(text, found[0], 4, col(t, '"/tmp/out.json"'), '"/tmp/out.json"');
    assertRange(text, found[1], 4, col(t, '"../shared/out.txt"'), '"../shared/out.txt"');
  });

  it('does not trip on paths inside the task dir (a/../b stays inside)', async () => {
    assert.deepEqual(await findingsOf('deliverable-lost', manifest([task('a', { expect_files: ['src/csv.ts', './out/a.json', 'a/../b.txt'] })])), []);
  });

  describe('in worktree mode, with a git repository', () => {
    let repo: string;
    before(() => {
      repo = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-lint-'));
      execFileSync('git', ['init', '-q', repo]);
      fs.writeFileSync(path.join(repo, '.gitignore'), 'build/\n*.log\n');
    });
    after(() => fs.rmSync(repo, { recursive: true, force: true }));

    const lint = (expect: string[], run: Record<string, unknown>, useGit = true) =>
      lintManifestText(manifest([task('a', { expect_files: expect })], run), path.join(repo, 'm.swarm.json'), { ...ctx, useGit }).then((fs) =>
        fs.filter((f) => f.rule === 'deliverable-lost'),
      );

    it('trips on a file the repository ignores, pointing at the entry', async () => {
      const expect = ['src/csv.ts', 'build/csv.js', 'test.log'];
      const text = manifest([task('a', { expect_files: expect })], WT);
      const found = await lint(expect, WT);
      assert.equal(found.length, 2);
      assertRange(text, found[0], 4, col(task('a', { expect_files: expect }), '"build/csv.js"'), '"build/csv.js"');
      assertRange(text, found[1], 4, col(task('a', { expect_files: expect }), '"test.log"'), '"test.log"');
      assert.match(found[0]?.message ?? '', /ignored by the repository's \.gitignore/);
    });

    it('sees a .gitignore edit made after an earlier lint (answers are cached only while ignore files are unchanged)', async () => {
      assert.deepEqual(await lint(['docs/notes.md'], WT), []);
      fs.appendFileSync(path.join(repo, '.gitignore'), 'docs/\n');
      assert.equal((await lint(['docs/notes.md'], WT)).length, 1);
    });

    it('does not ask git in plain mode, with useGit false, or when repo is not a repository', async () => {
      assert.deepEqual(await lint(['build/csv.js'], { run_name: 't' }), []);
      assert.deepEqual(await lint(['build/csv.js'], WT, false), []);
      assert.deepEqual(await lint(['build/csv.js'], { ...WT, repo: os.tmpdir() }), []);
      assert.deepEqual(await lint(['build/csv.js'], { ...WT, repo: '/nonexistent/repo' }), []);
    });
  });
});

describe('lint: write-collision', () => {
  it('trips on two tasks expecting the same absolute file, on the second, naming the first', async () => {
    const b = task('b', { expect_files: ['/tmp/report.json'] });
    const text = manifest([task('a', { expect_files: ['/tmp/report.json'] }), b]);
    const found = await findingsOf('write-collision', text);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.taskKey, 'b');
    assert.match(found[0]?.message ?? '', /Task "a" also names \/tmp\/report\.json/);
    assertRange(text, found[0], 5, col(b, '"/tmp/report.json"'), '"/tmp/report.json"');
  });

  it('trips on ../ paths that meet in the shared parent of the task dirs, and on an absolute path equal to one', async () => {
    const text = manifest([task('a', { expect_files: ['../out.txt'] }), task('b', { expect_files: ['/work/lint-tests/work/out.txt'] })], { workdir: './work' });
    assert.equal((await findingsOf('write-collision', text)).length, 1);
  });

  it('does not trip on the same relative file in plain mode (each task has its own dir)', async () => {
    assert.deepEqual(await findingsOf('write-collision', manifest([task('a'), task('b')])), []);
  });

  it('in worktree mode trips on two specs naming the same repository file, at the second mention', async () => {
    const b = task('b', {
      expect_files: undefined,
      spec: 'Add a dark theme toggle to src/app.ts that stores the choice in localStorage and applies it on load.',
    });
    const text = manifest(
      [task('a', { expect_files: undefined, spec: 'Add routing to ./src/app.ts with a /settings page, and a test in src/app.test.ts for both routes.' }), b],
      WT,
    );
    const found = await findingsOf('write-collision', text);
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /Task "a" also names src\/app\.ts/);
    assertRange(text, found[0], 5, col(b, 'src/app.ts'), 'src/app.ts');
  });

  it('in worktree mode counts expect_files as repository paths too', async () => {
    const spec = (what: string) => `Write ${what} for the CSV module: cover quoted fields, escaped quotes and CRLF line endings.`;
    const b = task('b', { spec: spec('the docs'), expect_files: ['src/csv.ts'] });
    const text = manifest([task('a', { spec: spec('the code'), expect_files: ['src/csv.ts'] }), b], WT);
    const found = await findingsOf('write-collision', text);
    assert.equal(found.length, 1);
    assertRange(text, found[0], 5, col(b, '"src/csv.ts"'), '"src/csv.ts"');
  });

  it('does not trip on different files, URLs or product names', async () => {
    const a = task('a', {
      expect_files: [],
      spec: 'Read https://example.com/docs/app.ts and write src/a.ts using Node.js streams; keep it under 200 lines please.',
    });
    const b = task('b', {
      expect_files: [],
      spec: 'Read https://example.com/docs/app.ts and write src/b.ts using Node.js streams; keep it under 200 lines please.',
    });
    assert.deepEqual(await findingsOf('write-collision', manifest([a, b], WT)), []);
  });
});

describe('lint: serial-fan-out', () => {
  it('trips on three tasks with max_parallel 1, pointing at the 1', async () => {
    const text = manifest([task('a'), task('b'), task('c')], { run_name: 't', max_parallel: 1 });
    const found = await findingsOf('serial-fan-out', text);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.taskKey, null);
    assertRange(text, found[0], 2, 33, '1');
  });

  it('does not trip on two tasks, or on max_parallel 2', async () => {
    assert.deepEqual(await findingsOf('serial-fan-out', manifest([task('a'), task('b')], { max_parallel: 1 })), []);
    assert.deepEqual(await findingsOf('serial-fan-out', manifest([task('a'), task('b'), task('c')], { max_parallel: 2 })), []);
  });
});

describe('lint: subscription-uncapped', () => {
  const flat = { claude: { engines: ['claude'], max_parallel: 2, billing: 'subscription' } };
  it('trips on a task of a subscription login under budget_usd with no budget_tokens, pointing at its engine', async () => {
    const t = task('a', { engine: 'claude' });
    const text = manifest([t, task('b', { engine: 'codex' })], { run_name: 't', budget_usd: 5, logins: flat });
    const found = await findingsOf('subscription-uncapped', text);
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.equal(found[0]?.taskKey, 'a');
    assert.match(found[0]?.message ?? '', /subscription login "claude".*budget_usd does not cap this task.*budget_tokens/);
    assertRange(text, found[0], 4, col(t, '"claude"'), '"claude"');
    // A task's own budget_usd is a cap it would not have either.
    assert.equal(
      (await findingsOf('subscription-uncapped', manifest([task('a', { engine: 'claude', budget_usd: 1 })], { run_name: 't', logins: flat }))).length,
      1,
    );
  });

  it('does not trip with budget_tokens (run or task), without budget_usd, or on a metered login', async () => {
    assert.deepEqual(
      await findingsOf(
        'subscription-uncapped',
        manifest([task('a', { engine: 'claude' })], { run_name: 't', budget_usd: 5, budget_tokens: 100000, logins: flat }),
      ),
      [],
    );
    assert.deepEqual(
      await findingsOf(
        'subscription-uncapped',
        manifest([task('a', { engine: 'claude', budget_tokens: 1000 })], { run_name: 't', budget_usd: 5, logins: flat }),
      ),
      [],
    );
    assert.deepEqual(await findingsOf('subscription-uncapped', manifest([task('a', { engine: 'claude' })], { run_name: 't', logins: flat })), []);
    assert.deepEqual(
      await findingsOf(
        'subscription-uncapped',
        manifest([task('a', { engine: 'claude' })], { run_name: 't', budget_usd: 5, logins: { claude: { engines: ['claude'], max_parallel: 2 } } }),
      ),
      [],
    );
  });
});

describe('lint: missing-verified, missing-task-type, missing-expect-files', () => {
  for (const [rule, field] of [
    ['missing-verified', 'verified'],
    ['missing-task-type', 'task_type'],
    ['missing-expect-files', 'expect_files'],
  ] as const) {
    it(`${rule}: an info at the task's key when ${field} is absent; nothing when present`, async () => {
      const t = task('parse-csv', { [field]: undefined });
      const text = manifest([task('ok'), t]);
      const found = await findingsOf(rule, text);
      assert.equal(found.length, 1);
      assert.equal(found[0]?.severity, 'info');
      assertRange(text, found[0], 5, col(t, '"parse-csv"'), '"parse-csv"');
    });
  }

  it('missing-expect-files points at an empty list, and is for plain mode only', async () => {
    const t = task('a', { expect_files: [] });
    const text = manifest([t]);
    assertRange(text, (await findingsOf('missing-expect-files', text))[0], 4, col(t, '[]', '"expect_files":'), '[]');
    assert.deepEqual(await findingsOf('missing-expect-files', manifest([task('a', { expect_files: undefined })], WT)), []);
  });

  it('missing-task-type is not asked of the script engine (no model to score)', async () => {
    assert.deepEqual(await findingsOf('missing-task-type', manifest([task('a', { engine: 'script', task_type: undefined })])), []);
  });
});

describe('lint: model-not-routable', () => {
  const trips: [engine: string, model: string][] = [
    ['opencode', 'qwen3-coder'],
    ['opencode', 'openrouter/'],
    ['codex', 'anthropic/claude-sonnet-4-5'],
    ['codex', 'claude-sonnet-4-5'],
    ['claude', 'openai/gpt-5'],
    ['claude', 'gpt-5-mini'],
    ['gemini', 'qwen/qwen3-coder'],
    ['gemini', 'o3'],
    ['script', 'gpt-5-mini'],
  ];
  for (const [engine, model] of trips) {
    it(`trips on ${model} for ${engine}, pointing at the model`, async () => {
      const t = task('a', { engine, model });
      const text = manifest([t]);
      const found = await findingsOf('model-not-routable', text);
      assert.equal(found.length, 1);
      assertRange(text, found[0], 4, col(t, JSON.stringify(model)), JSON.stringify(model));
    });
  }

  const passes: [engine: string, model: string, args?: string[]][] = [
    ['opencode', 'openrouter/qwen/qwen3-coder'],
    ['codex', 'gpt-5-mini'],
    ['codex', 'openai/gpt-5'],
    ['codex', 'qwen/qwen3-coder', ['-c', 'model_provider=openrouter']],
    ['claude', 'claude-sonnet-4-5'],
    ['claude', 'sonnet'],
    ['gemini', 'gemini-2.5-pro'],
    ['grok', 'anthropic/claude-sonnet-4-5'],
    ['codex', 'my-finetune-v3'],
  ];
  for (const [engine, model, args] of passes) {
    it(`does not trip on ${model} for ${engine}${args ? ` with ${args.join(' ')}` : ''}`, async () => {
      assert.deepEqual(await findingsOf('model-not-routable', manifest([task('a', { engine, model, engine_args: args })])), []);
    });
  }

  it('names the engine that would reach the model', async () => {
    const [f] = await findingsOf('model-not-routable', manifest([task('a', { engine: 'codex', model: 'anthropic/claude-sonnet-4-5' })]));
    assert.match(f?.message ?? '', /on the claude engine/);
  });
});

describe('lint: full-access-not-enabled', () => {
  it('trips on full_access: true when full access is not allowed, pointing at the true', async () => {
    const t = task('a', { full_access: true });
    const text = manifest([t]);
    const found = await findingsOf('full-access-not-enabled', text);
    assert.equal(found.length, 1);
    assertRange(text, found[0], 4, col(t, 'true'), 'true');
    assert.match(found[0]?.message ?? '', /without its sandbox.*allow_full_access.*verdict\.allowFullAccess/);
  });

  it('does not trip once allowed, nor on full_access: false', async () => {
    assert.deepEqual(await findingsOf('full-access-not-enabled', manifest([task('a', { full_access: true })]), { allowFullAccess: true }), []);
    assert.deepEqual(await findingsOf('full-access-not-enabled', manifest([task('a', { full_access: false })])), []);
  });
});

describe('lint: spec-too-long', () => {
  const pad = (bytes: number) => SPEC + ' '.repeat(bytes - SPEC.length);

  it('a 2,000,000-byte spec is an error on the spec, naming the limit and the size', async () => {
    const t = task('a', { spec: pad(2_000_000) });
    const text = manifest([t]);
    const found = await findingsOf('spec-too-long', text);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'error');
    assert.equal(found[0]?.taskKey, 'a');
    assert.ok(
      found[0]?.message.startsWith('spec is 2,000,000 bytes; one argument may be at most 131,072 bytes on Linux (execve(2) MAX_ARG_STRLEN'),
      found[0]?.message,
    );
    const r = found[0]?.range;
    assert.equal(text.slice(r?.offset, (r?.offset ?? 0) + (r?.length ?? 0)), JSON.stringify(t.spec));
  });

  it('the limit is exact: 131,071 bytes fit (with the NUL), 131,072 do not; bytes, not characters', async () => {
    const once = { max_attempts: 1 };
    assert.deepEqual(await findingsOf('spec-too-long', manifest([task('a', { spec: pad(131_071), ...once })])), []);
    assert.equal((await findingsOf('spec-too-long', manifest([task('a', { spec: pad(131_072), ...once })])))[0]?.severity, 'error');
    const accents = SPEC + 'é'.repeat(65_536); // 2 bytes each in UTF-8
    assert.ok(accents.length < 131_072);
    assert.equal((await findingsOf('spec-too-long', manifest([task('a', { spec: accents, ...once })])))[0]?.severity, 'error');
  });

  it('really is the Linux limit: execve refuses one byte more', function () {
    if (process.platform !== 'linux') this.skip();
    const run = (bytes: number) => spawnSync('/bin/true', ['x'.repeat(bytes)]).error?.message ?? 'ok';
    assert.equal(run(131_071), 'ok');
    assert.match(run(131_072), /E2BIG/);
  });

  it('warns within 64 KiB of the limit when a retry appends to the spec; not for max_attempts 1 or the script engine', async () => {
    const near = pad(100_000);
    const [f] = await findingsOf('spec-too-long', manifest([task('a', { spec: near })]));
    assert.equal(f?.severity, 'warning');
    assert.match(f?.message ?? '', /^spec is 100,000 bytes, within 64 KiB of the limit: .* A retry appends the previous failure/);
    assert.deepEqual(await findingsOf('spec-too-long', manifest([task('a', { spec: near, max_attempts: 1 })])), []);
    assert.deepEqual(await findingsOf('spec-too-long', manifest([task('a', { spec: near, engine: 'script' })])), []);
    assert.deepEqual(await findingsOf('spec-too-long', manifest([task('a', { spec: pad(60_000) })])), []);
  });

  it('says nothing for an engine that takes the spec another way', async () => {
    const engines = new Map(ctx.engines);
    const codex = engines.get('codex');
    assert.ok(codex);
    engines.set('stdin-codex', { ...codex, name: 'stdin-codex', argv: ['exec', '-'] });
    const text = manifest([task('a', { spec: pad(2_000_000), engine: 'stdin-codex' })]);
    assert.deepEqual(await findingsOf('spec-too-long', text, { engines }), []);
  });
});

describe('lint: tests-protected', () => {
  it('notes a test-hardening task that keeps the default protection, on its task_type', async () => {
    const t = task('a', { task_type: 'test-hardening' });
    const text = manifest([t]);
    const found = await findingsOf('tests-protected', text);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'info');
    assertRange(text, found[0], 4, col(t, '"test-hardening"'), '"test-hardening"');
    assert.match(found[0]?.message ?? '', /is a test-hardening task but keeps the default protection: existing tests .* read-only to its worker/);
    assert.match(found[0]?.message ?? '', /"protect": \[\]/);
  });

  it('notes a spec that says it edits or adds tests, on those words', async () => {
    for (const words of ['Update the existing tests', 'strengthen the weak tests', 'Extend the unit tests', 'rewrite test cases', 'existing test suites']) {
      const t = task('a', { spec: `${SPEC} ${words} in tests/test_csv.py.` });
      const text = manifest([t]);
      const found = await findingsOf('tests-protected', text);
      assert.equal(found.length, 1, words);
      assertRange(text, found[0], 4, col(t, words), words);
    }
  });

  it('says nothing when protect is set (task or run), the spec says not to touch tests, or the task is not about tests', async () => {
    const hardening = { task_type: 'test-hardening' };
    assert.deepEqual(await findingsOf('tests-protected', manifest([task('a', { ...hardening, protect: [] })])), []);
    assert.deepEqual(await findingsOf('tests-protected', manifest([task('a', { ...hardening, protect: ['!tests/**'] })])), []);
    assert.deepEqual(await findingsOf('tests-protected', manifest([task('a', hardening)], { run_name: 't', protect: [] })), []);
    assert.deepEqual(await findingsOf('tests-protected', manifest([task('a', { spec: `${SPEC} Do not edit the tests.` })])), []);
    assert.deepEqual(await findingsOf('tests-protected', manifest([task('a')])), []);
    assert.deepEqual(
      await findingsOf('tests-protected', manifest([task('a', { spec: `${SPEC} Add tests/test_csv.py with at least 8 cases.` })])),
      [],
      'new test files are allowed',
    );
  });
});

describe('lint: allow-paths and deps-not-allowed', () => {
  it("allow-paths: an expected file outside the task's (or the run's) allow_paths is an error at the entry", async () => {
    const text = manifest(
      [task('a', { expect_files: ['src/parser/a.ts', 'docs/a.md'], allow_paths: ['src/parser'] }), task('b', { expect_files: ['lib/b.ts'] })],
      { allow_paths: ['src/**'] },
    );
    const found = await findingsOf('allow-paths', text);
    assert.deepEqual(
      found.map((f) => [f.taskKey, f.severity]),
      [
        ['a', 'error'],
        ['b', 'error'],
      ],
    );
    assert.match(found[0]?.message ?? '', /docs\/a\.md is outside allow_paths \(src\/parser\)/);
    assert.deepEqual(await findingsOf('allow-paths', manifest([task('a', { expect_files: ['src/a.ts'] })], { allow_paths: ['src/**'] })), []);
  });

  it('deps-not-allowed: a spec asking for a package with nothing allowed warns; allow_deps or the guard off silences it', async () => {
    const spec = `${SPEC} Use zod for validation: run npm install zod first.`;
    assert.equal((await findingsOf('deps-not-allowed', manifest([task('a', { spec })]))).length, 1);
    assert.deepEqual(await findingsOf('deps-not-allowed', manifest([task('a', { spec, allow_deps: ['zod'] })])), []);
    assert.deepEqual(await findingsOf('deps-not-allowed', manifest([task('a', { spec, guard: { deps: false } })])), []);
    assert.deepEqual(await findingsOf('deps-not-allowed', manifest([task('a', { spec })], { allow_deps: true })), []);
    assert.deepEqual(await findingsOf('deps-not-allowed', manifest([task('a')])), []);
  });
});
