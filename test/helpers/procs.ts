// Looks at this machine's processes through /proc (proc(5)), for the tests that check what a step left alive.
import fs from 'node:fs';

/**
 * Live (not zombie) processes whose command line (arguments joined by spaces) contains `marker`; with `comm`, only
 * those whose command name (/proc/<pid>/stat field 2) is exactly `comm`.
 */
export function processesWith(marker: string, comm?: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (comm && stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== comm) continue;
      if (cmdline.includes(marker) && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

/** The direct children of `pid` (/proc/<pid>/stat field 4 is the parent's pid). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // gone
    }
  }
  return out;
}
