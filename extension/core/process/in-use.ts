import fs from 'node:fs';
import path from 'node:path';

/**
 * Live processes of this user whose working directory is `dir` or below it (Linux /proc/<pid>/cwd; elsewhere none
 * are found). A folder a process works in must not be deleted under it (verdict clean). Never throws.
 */
export function processesIn(dir: string): { pid: number; command: string }[] {
  const root = path.resolve(dir);
  const found: { pid: number; command: string }[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cwd = fs.readlinkSync(`/proc/${entry}/cwd`);
      if (cwd !== root && !cwd.startsWith(root + path.sep)) continue;
      const command = fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      found.push({ pid: Number(entry), command });
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}
