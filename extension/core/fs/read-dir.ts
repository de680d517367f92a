import fs from 'node:fs';

/**
 * The names in folder `dir` (fs.readdirSync's order), or [] when it cannot be read (missing, not a folder, no
 * permission): for sweeps over folders that may vanish or never have been made.
 */
export function readDirOrEmpty(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
