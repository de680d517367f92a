/** Finding a command's executable on PATH once, not at every spawn (a bare `bash` walked PATH again for every check). */
import fs from 'node:fs';
import path from 'node:path';

/** Whether `file` is a regular file this process may execute. Never throws. */
export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

const resolved = new Map<string, string>();

/**
 * The absolute path a bare command name resolves to on `pathEnv`, remembered per (name, PATH) and checked again (one
 * access call) on each use, so a binary removed mid-run is reported. A name with a slash is returned as it is when it
 * names an executable file. Null when nothing executable is found.
 */
export function resolveCommand(file: string, pathEnv: string): string | null {
  if (file.includes('/')) return isExecutable(file) ? file : null;
  const key = `${file}\0${pathEnv}`;
  const known = resolved.get(key);
  if (known && isExecutable(known)) return known;
  resolved.delete(key);
  for (const dir of pathEnv.split(':')) {
    if (!dir) continue;
    const candidate = path.resolve(dir, file);
    if (isExecutable(candidate)) {
      resolved.set(key, candidate);
      return candidate;
    }
  }
  return null;
}
