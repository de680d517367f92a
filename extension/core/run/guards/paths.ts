/**
 * Guard `paths`: the worker may add, change, delete or rename only files under the task's `allow_paths` (globs
 * relative to the task dir; a glob without wildcards also covers everything under it as a folder). A rename is two
 * changes (the old path and the new one) and both must be allowed. A symlink the worker adds or changes must point
 * inside the task dir and at an allowed path (else a link under `src/parser/` could deliver `../../config` as if it
 * were the parser's file).
 */
import path from 'node:path';
import { allowedPathMatcher } from '../../manifest/allow-paths';
import type { Change, GuardFinding } from './types';

export { allowedPathMatcher } from '../../manifest/allow-paths';

/** Changes outside `allowPaths`, and symlinks pointing out of the task dir or at a path outside them. */
export function findPathViolations(changes: readonly Change[], allowPaths: readonly string[]): GuardFinding[] {
  const allowed = allowedPathMatcher(allowPaths);
  const list = allowPaths.join(', ');
  const out: GuardFinding[] = [];
  for (const c of changes) {
    const firstLine = c.after !== null && c.status !== 'deleted' ? 1 : null;
    if (c.status === 'renamed' && c.from && !allowed(c.from))
      out.push({ guard: 'paths', file: c.from, line: null, message: `renamed to ${c.path}; it is outside allow_paths (${list})` });
    if (!allowed(c.path)) {
      out.push({
        guard: 'paths',
        file: c.path,
        line: firstLine,
        message: `${c.status === 'renamed' ? 'renamed here' : c.status} outside allow_paths (${list})`,
      });
      continue;
    }
    if (c.kind === 'symlink' && c.status !== 'deleted' && c.target !== undefined) {
      const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(c.path), c.target));
      if (path.posix.isAbsolute(c.target) || resolved === '..' || resolved.startsWith('../'))
        out.push({ guard: 'paths', file: c.path, line: null, message: `a symlink to ${c.target}, outside the task dir` });
      else if (!allowed(resolved)) out.push({ guard: 'paths', file: c.path, line: null, message: `a symlink to ${resolved}, outside allow_paths (${list})` });
    }
  }
  return out;
}
