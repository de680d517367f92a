import picomatch from 'picomatch';

/**
 * The matcher of a task's `allow_paths` (paths relative to the task dir, `/`-separated): each entry is a picomatch
 * glob (`src/parser/**`, dot files included); an entry without wildcards is that path and, as a folder, everything
 * under it (`src/parser`, `src/parser/`). Shared by the `paths` guard (run/guards/paths.ts) and lint.
 */
export function allowedPathMatcher(globs: readonly string[]): (rel: string) => boolean {
  const expanded = globs.flatMap((g) => {
    const clean = g.replace(/^\.\//, '').replace(/\/+$/, '');
    return picomatch.scan(clean).isGlob ? [clean] : [clean, `${clean}/**`];
  });
  return picomatch(expanded, { dot: true });
}
