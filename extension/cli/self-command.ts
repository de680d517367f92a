import fs from 'node:fs';
import path from 'node:path';

/**
 * How the user can run this CLI again, for hints such as "run `verdict hud`": `verdict` when the `verdict` found on
 * PATH is this very script (an installed package, `npm link`), else `node <script>` with the script's path as the
 * user would type it from the current directory (a clone run through `npm run demo` has no `verdict` on PATH).
 * `script` is the path Node was started with (process.argv[1]); `pathVar` the PATH to search. Never throws.
 * @returns a shell command line, e.g. `verdict` or `node dist/cli.js`; `verdict` when the script is unknown
 */
export function selfCommand(script: string | undefined = process.argv[1], pathVar: string = process.env.PATH ?? ''): string {
  if (!script) return 'verdict';
  const real = (p: string): string | null => {
    try {
      return fs.realpathSync(p);
    } catch {
      return null;
    }
  };
  const self = real(script);
  for (const dir of pathVar.split(path.delimiter)) {
    if (!dir) continue;
    const found = real(path.join(dir, 'verdict'));
    if (found !== null) return found === self ? 'verdict' : `node ${shellWord(displayPath(script))}`;
  }
  return `node ${shellWord(displayPath(script))}`;
}

/** `p` relative to the current directory when it lies under it, else absolute. */
function displayPath(p: string): string {
  const abs = path.resolve(p);
  const rel = path.relative(process.cwd(), abs);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : abs;
}

/** `word` quoted for a POSIX shell when it holds anything but plain path characters. Pure. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
