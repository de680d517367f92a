import fs from 'node:fs';

/**
 * A process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or null when it is gone or /proc is
 * absent. With the pid it identifies a process across pid reuse: proc(5).
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at ") "; field 3 is the first of them.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
