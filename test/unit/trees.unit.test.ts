import assert from 'node:assert/strict';
import { conePathspecs, conePatterns, inCone, sparseCone, visibleInCone } from '../../extension/core/git/sparse-cone';
import { overlayIdentity, overlayMountsUnder } from '../../extension/core/git/overlay';
import { findingsOf, manifest, task } from './lint-helpers';

// The pure parts of `tree` (docs/manifest.md "Trees"): the sparse cone from globs, git's cone pattern file, what is
// checked out and what may be written, the overlay mounts found in mountinfo, and lint's sparse-outside warning.

describe('trees: the sparse cone from globs', () => {
  it('takes the folder before the first wildcard; a plain path is a folder; nested folders fold into their parent', () => {
    assert.deepEqual(sparseCone(['src/a/**']), ['src/a']);
    assert.deepEqual(sparseCone(['src/a/*.ts', './docs/', 'src/a/deep/x/**', 'test/a']), ['docs', 'src/a', 'test/a']);
    assert.deepEqual(sparseCone(['src/{a,b}/**']), ['src']);
    assert.deepEqual(sparseCone(['lib/**', 'src/a/**', '*.md']), [''], 'a root glob is the whole tree');
  });

  it('refuses absolute paths, .. and backslashes, naming the entry', () => {
    assert.throws(() => sparseCone(['/etc/**']), /sparse entry "\/etc\/\*\*" must be relative/);
    assert.throws(() => sparseCone(['../other/**']), /sparse entry "\.\.\/other\/\*\*" leaves the repository/);
    assert.throws(() => sparseCone(['src/../../x']), /leaves the repository/);
    assert.throws(() => sparseCone(['src\\a']), /backslash/);
  });

  it("writes git's cone pattern file: root files, each ancestor's files, the cone folders", () => {
    assert.equal(conePatterns(['src/a/b', 'test']), ['/*', '!/*/', '/src/', '!/src/*/', '/src/a/', '!/src/a/*/', '/src/a/b/', '/test/', ''].join('\n'));
    assert.equal(conePatterns(['']), '/*\n');
    assert.equal(conePatterns(['we*ird']), ['/*', '!/*/', '/we\\*ird/', ''].join('\n'));
  });

  it('in the cone: under a cone folder (written, sealed); visible: also the files of the root and of ancestors', () => {
    const cone = ['src/a/b'];
    assert.equal(inCone(cone, 'src/a/b/x.ts'), true);
    assert.equal(inCone(cone, 'src/a/b'), true);
    assert.equal(inCone(cone, 'src/a/bc/x.ts'), false, 'a sibling whose name starts alike is outside');
    assert.equal(inCone(cone, 'src/a/x.ts'), false);
    assert.equal(visibleInCone(cone, 'src/a/x.ts'), true, 'a file of an ancestor is checked out');
    assert.equal(visibleInCone(cone, 'package.json'), true, 'a root file is checked out');
    assert.equal(visibleInCone(cone, 'src/c/x.ts'), false);
    assert.equal(visibleInCone(cone, 'lib/x.ts'), false);
    assert.deepEqual(conePathspecs(cone), [':(literal)src/a/b']);
    assert.deepEqual(conePathspecs(['']), []);
    assert.equal(inCone([''], 'anything/at/all'), true);
  });
});

describe('trees: overlay mounts in mountinfo', () => {
  it('finds overlay mount points under a folder, unescaping octal, deepest first; ignores other types and neighbours', () => {
    const info = [
      '27 1 0:25 / / rw,relatime - ext4 /dev/root rw',
      '44 27 0:39 / /home/u/.verdict/worktrees/r1/a rw,relatime - overlay overlay rw,lowerdir=/x,upperdir=/y,workdir=/z',
      '45 27 0:40 / /home/u/.verdict/worktrees/r1/b\\040c rw - overlay overlay rw,lowerdir=/x',
      '46 27 0:41 / /home/u/.verdict/worktrees/r10/a rw - overlay overlay rw,lowerdir=/x',
      '47 27 0:42 / /home/u/.verdict/worktrees/r1/a/sub rw - overlay overlay rw',
      '48 27 0:43 / /home/u/.verdict/worktrees/r1/t rw - tmpfs tmpfs rw',
      'garbage',
    ].join('\n');
    assert.deepEqual(overlayMountsUnder(info, '/home/u/.verdict/worktrees/r1'), [
      '/home/u/.verdict/worktrees/r1/a/sub',
      '/home/u/.verdict/worktrees/r1/b c',
      '/home/u/.verdict/worktrees/r1/a',
    ]);
    assert.deepEqual(overlayMountsUnder(info, '/nowhere'), []);
  });

  it("names an overlay by its device and super options, the same in a sandbox's copy at another path and flags", () => {
    const host = [
      '44 27 0:39 / /h/worktrees/r1/a rw,relatime - overlay overlay rw,lowerdir=/h/l,upperdir=/h/u/a,workdir=/h/w/a',
      '45 27 0:40 / /h/worktrees/r1/b\\040c rw - overlay overlay rw,lowerdir=/h/l,upperdir=/h/u/b,workdir=/h/w/b',
      '46 27 0:41 / /h/worktrees/r1/t rw - tmpfs tmpfs rw',
    ].join('\n');
    const a = overlayIdentity(host, '/h/worktrees/r1/a/');
    assert.equal(a, '0:39 / rw,lowerdir=/h/l,upperdir=/h/u/a,workdir=/h/w/a');
    assert.equal(overlayIdentity(host, '/h/worktrees/r1/b c'), '0:40 / rw,lowerdir=/h/l,upperdir=/h/u/b,workdir=/h/w/b');
    assert.equal(overlayIdentity(host, '/h/worktrees/r1/t'), null, 'a tmpfs is no overlay');
    assert.equal(overlayIdentity(host, '/h/worktrees/r1'), null);
    const sandbox = '131 111 0:39 / /newroot/h/worktrees/r1/a ro,nosuid,nodev,relatime - overlay overlay rw,lowerdir=/h/l,upperdir=/h/u/a,workdir=/h/w/a';
    assert.equal(overlayIdentity(sandbox, '/newroot/h/worktrees/r1/a'), a);
  });
});

describe('lint: sparse-outside', () => {
  const SPARSE = { run_name: 't', worktrees: true, tree: 'sparse' };

  it('warns when the check names a path the sparse tree does not hold, or an expected file lies outside the folders', async () => {
    const text = manifest(
      [
        task('a', {
          sparse: ['src/a/**'],
          check: 'bash checks/a.sh && node src/a/t.js && test -s package.json',
          expect_files: ['src/a/out.txt', 'src/b/out.txt'],
        }),
      ],
      SPARSE,
    );
    const found = await findingsOf('sparse-outside', text);
    assert.deepEqual(
      found.map((f) => [f.taskKey, f.severity]),
      [
        ['a', 'warning'],
        ['a', 'warning'],
      ],
    );
    assert.match(found.map((f) => f.message).join('\n'), /The check names checks\/a\.sh, which the sparse tree of src\/a does not hold/);
    assert.match(found.map((f) => f.message).join('\n'), /The expected file src\/b\/out\.txt is outside the sparse folders \(src\/a\)/);
  });

  it("takes the run's sparse for tasks without their own; silent inside the cone, and for other trees", async () => {
    const inside = manifest([task('a', { check: 'bash src/a/check.sh', expect_files: ['src/a/x.txt'] })], { ...SPARSE, sparse: ['src/a'] });
    assert.deepEqual(await findingsOf('sparse-outside', inside), []);
    const other = manifest([task('a', { sparse: ['src/a'], check: 'bash checks/a.sh' })], { run_name: 't', worktrees: true });
    assert.deepEqual(await findingsOf('sparse-outside', other), []);
  });

  it('a sparse run whose task names no folders is told at the task', async () => {
    const found = await findingsOf('sparse-outside', manifest([task('a')], SPARSE));
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /every task needs its folders/);
  });
});
