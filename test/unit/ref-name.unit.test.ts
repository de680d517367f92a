import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { refComponentProblem } from '../../extension/core/manifest/ref-name';
import { parseManifest } from '../../extension/core/run/manifest';

/** Task keys as git branch name components: the pure rules against git itself, and what the loader says. */
describe('ref names: git-check-ref-format(1) in TypeScript', () => {
  const samples = [
    'a',
    'parse-csv',
    'A-1_b.c',
    'v1.2',
    'foo.',
    'bar.lock',
    'bar.lock.',
    'x.locked',
    'lock',
    '.lock',
    '.hidden',
    'a..b',
    '@',
    'a@b',
    'a@{1}',
    'a b',
    'a~1',
    'a^',
    'a:b',
    'a?',
    'a*',
    'a[1]',
    'a\\b',
    'a/b',
    '',
    'tab\there',
    'del\x7f',
    '-dash',
    'HEAD',
  ];
  /** git's own answer for `verdict/run1/<component>`. */
  const gitAccepts = (component: string) => {
    try {
      execFileSync('git', ['check-ref-format', `refs/heads/verdict/run1/${component}`], { stdio: 'pipe' });
      return true;
    } catch {
      return false;
    }
  };
  for (const component of samples) {
    it(`agrees with git check-ref-format on ${JSON.stringify(component)}`, () => {
      const problem = refComponentProblem(component);
      // `a/b` is two valid components to git; as one task key it is refused (a key is one component).
      const expected = component.includes('/') ? false : gitAccepts(component);
      assert.equal(problem === null, expected, `${JSON.stringify(component)}: ${problem}`);
    });
  }

  it('says which rule is broken', () => {
    assert.match(refComponentProblem('foo.') ?? '', /ends with "\."/);
    assert.match(refComponentProblem('bar.lock') ?? '', /ends with "\.lock"/);
    assert.match(refComponentProblem('a@{1}') ?? '', /contains "@\{"/);
    assert.match(refComponentProblem('tab\there') ?? '', /control character U\+0009/);
  });
});

describe('manifest loader: task keys that cannot name a branch', () => {
  const keyErrors = (key: string) =>
    parseManifest(JSON.stringify({ tasks: [{ key, spec: 'x', check: 'true' }] }), '/work/x/m.json').problems.filter((p) => p.severity === 'error');

  for (const [key, reason, instead] of [
    ['foo.', 'it ends with "."', 'foo'],
    ['bar.lock', 'it ends with ".lock"', 'bar'],
    ['v2.lock.', 'it ends with "."', 'v2'],
  ] as const) {
    it(`refuses ${JSON.stringify(key)}, saying why and what would do`, () => {
      const errs = keyErrors(key);
      assert.equal(errs.length, 1, JSON.stringify(errs));
      assert.equal(errs[0]?.code, 'unsafe-key');
      assert.equal(errs[0]?.path, 'tasks[0].key');
      assert.ok(errs[0]?.message.startsWith(`task key "${key}" cannot be part of a git branch name: ${reason}`), errs[0]?.message);
      assert.match(errs[0]?.message ?? '', /git-check-ref-format\(1\)/);
      assert.match(errs[0]?.message ?? '', new RegExp(`verdict/<run_id>/${key.replace(/\./g, '\\.')}\\. Rename it \\(e\\.g\\. "${instead}"\\)`));
    });
  }

  it('the schema pattern and the ref rules agree on every key made of allowed characters', () => {
    for (const key of ['a', 'a.b', 'a.', 'a.lock', 'a.lock.b', 'a..b', '.a', 'lock', 'x.locks', '-a', 'a-', '_', '9']) {
      const refused = keyErrors(key).length > 0;
      assert.equal(refused, refComponentProblem(key) !== null, key);
    }
  });

  it('keeps the old message for characters outside [A-Za-z0-9._-]', () => {
    assert.match(keyErrors('a/b.')[0]?.message ?? '', /use only letters, digits/);
  });
});
