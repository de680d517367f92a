/** Finding an engine's executable on PATH before any task starts. Node only: no shell, no `which` process. */
import fs from 'node:fs';
import path from 'node:path';

function isExecutableFile(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The absolute path of `binary` as a shell would find it: a name with a slash is checked as a path (relative
 * to the current directory); a bare name is looked up in each directory of `pathEnv` (PATH syntax, split on
 * the platform's delimiter; empty entries are skipped). Only executable regular files count.
 * @returns the absolute path, or null when not found. Never throws.
 */
export function findBinary(binary: string, pathEnv: string): string | null {
  if (binary === '') return null;
  if (binary.includes('/') || binary.includes(path.sep)) {
    const file = path.resolve(binary);
    return isExecutableFile(file) ? file : null;
  }
  for (const dir of pathEnv.split(path.delimiter)) {
    if (dir === '') continue;
    const file = path.resolve(dir, binary);
    if (isExecutableFile(file)) return file;
  }
  return null;
}
