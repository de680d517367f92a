/**
 * placeOf / normalizeRelative (rules/task-paths.ts) answer plain relative paths with one native test;
 * that shortcut must give exactly what the path-module spelling gives, for every path it takes.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { normalizeRelative, placeOf } from '../../extension/core/manifest/rules/task-paths';

/** The spelling before the shortcut. */
function reference(file: string): [string, string] {
  const norm = path.posix.normalize(file.replace(/\\/g, '/')).replace(/\/$/, '');
  const place = path.posix.isAbsolute(file) || path.win32.isAbsolute(file) ? 'absolute' : norm === '..' || norm.startsWith('../') ? 'escapes' : 'inside';
  return [place, norm];
}

describe('task-paths: the plain-relative shortcut', () => {
  it('gives the same place and spelling as path.posix.normalize for every path of up to 4 parts', () => {
    const parts = ['a', 'b.txt', '.', '..', '...', '.x', '..x', '/', '\\', 'C:', 'x:y', ' ', 'é'];
    let checked = 0;
    const walk = (file: string, depth: number): void => {
      if (depth === 0) {
        assert.deepEqual([placeOf(file), normalizeRelative(file)], reference(file), JSON.stringify(file));
        checked++;
        return;
      }
      for (const p of parts) walk(file + p, depth - 1);
    };
    for (let depth = 1; depth <= 4; depth++) walk('', depth);
    assert.ok(checked > 30_000);
  });
});
