/**
 * Whether a string can be one component of a git ref name, by the rules of git-check-ref-format(1), in pure
 * TypeScript: the linter reads untrusted workspaces and runs no git there. A task key becomes the last component of
 * its branch `verdict/<run_id>/<key>`, so a key git would refuse ends every attempt in ERROR.
 */

/**
 * Why `component` cannot be one slash-separated component of a git ref name, or null when it can. The rules of
 * git-check-ref-format(1) that apply to a single component:
 * 1. it cannot begin with a dot `.`;
 * 2. it cannot contain `..`;
 * 3. it cannot contain ASCII control characters (below 0x20, or DEL 0x7f), space, `~`, `^` or `:`;
 * 4. it cannot contain `?`, `*` or `[`;
 * 5. it cannot contain `/` (that would make two components) and cannot be empty;
 * 6. it cannot end with a dot `.`;
 * 7. it cannot contain `@{`;
 * 9. it cannot contain a `\`;
 * and no component may end with `.lock` (git keeps `<ref>.lock` files beside refs while it updates them). Rule 8
 * (not the single character `@`) is about the whole name, which for a task branch starts with `verdict/`.
 * @returns one sentence naming the rule broken, e.g. `it ends with ".lock" (git keeps <ref>.lock files while it updates a ref)`
 */
export function refComponentProblem(component: string): string | null {
  if (component === '') return 'it is empty';
  if (component.startsWith('.')) return 'it begins with "."';
  if (component.endsWith('.lock')) return 'it ends with ".lock" (git writes <ref>.lock while it updates a ref)';
  if (component.endsWith('.')) return 'it ends with "."';
  if (component.includes('..')) return 'it contains ".."';
  if (component.includes('@{')) return 'it contains "@{" (reflog syntax, as in HEAD@{1})';
  const bad = /[\x00-\x20\x7f~^:?*[\\/]/.exec(component);
  if (bad) {
    const c = bad[0];
    const name =
      c === ' '
        ? 'a space'
        : c.charCodeAt(0) < 0x20 || c === '\x7f'
          ? `the control character U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`
          : `"${c}"`;
    return `it contains ${name}`;
  }
  return null;
}
