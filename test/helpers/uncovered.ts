// A temporary folder outside the places every sandbox covers with a tmpfs of its own (/tmp, /var/tmp, /run: see
// core/process/sandbox-view.ts), for tests of what a sandbox shows of the host's own filesystem there (a bind left out,
// a host socket covered where it lies). The clone's ignored .cache/ when the clone lies outside them, else the user's
// ~/.cache, else (a clone and a HOME both under /tmp, as a CI job or a throwaway user may have) /var/lib or /var/cache
// where the user may write there; removed when the test process exits (VERDICT_KEEP_TMP=1 keeps them).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { coveredRoots } from '../../extension/core/process/sandbox-view';

const made: string[] = [];
process.on('exit', () => {
  if (process.env.VERDICT_KEEP_TMP) return;
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** True when the real path `p` lies in a folder every sandbox covers (so the sandbox does not show it as the host has it). */
export function underCoveredRoot(p: string): boolean {
  return coveredRoots().some((r) => p === r.root || p.startsWith(`${r.root}/`));
}

/**
 * A fresh folder (real path) outside /tmp, /var/tmp and /run. Throws when no candidate place can be written (the
 * message says which were tried).
 */
export function uncoveredDir(prefix: string): string {
  const clone = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const places = [
    path.join(clone, '.cache', 'test-dirs'),
    path.join(os.homedir(), '.cache', 'verdict-test-dirs'),
    '/var/lib/verdict-test-dirs',
    '/var/cache/verdict-test-dirs',
  ];
  for (const place of places) {
    try {
      fs.mkdirSync(place, { recursive: true, mode: 0o1777 });
      const dir = fs.realpathSync(fs.mkdtempSync(path.join(place, prefix)));
      if (underCoveredRoot(dir)) {
        fs.rmSync(dir, { recursive: true, force: true });
        continue;
      }
      made.push(dir);
      return dir;
    } catch {
      // not writable here: the next place
    }
  }
  throw new Error(`no folder outside /tmp, /var/tmp and /run could be made (tried ${places.join(', ')})`);
}
