import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder holding Verdict's package.json (where examples/ and schemas/ ship), found by walking up from this
 * module, whether it runs from source (tsx) or from the bundle in dist/.
 * @throws Error when no such folder exists (a broken install)
 */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: string }).name === 'verdict') return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error('cannot find the Verdict package folder (no package.json named "verdict" above the program)');
    dir = up;
  }
}
