import fs from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { pidAlive } from '../../core/live/registry';

/** `<home>/hud.json`: the hud serving this VERDICT_HOME, so `verdict run` can reuse it. Mode 0600 (it holds the token). */
export interface HudRecord {
  pid: number;
  port: number;
  /** The page's URL, token included: `http://127.0.0.1:<port>/t/<token>/`. */
  url: string;
  home: string;
  startedAt: number;
}

/** Where the record of the hud of `home` lives. */
export function hudFile(home: string): string {
  return path.join(home, 'hud.json');
}

/** Writes the record (creating `home`). */
export function writeHudRecord(home: string, rec: HudRecord): void {
  fs.mkdirSync(home, { recursive: true });
  writeFileAtomic.sync(hudFile(home), JSON.stringify(rec, null, 1) + '\n', { mode: 0o600 });
}

/** Removes the record when it is this process's. */
export function removeHudRecord(home: string, pid = process.pid): void {
  try {
    const rec = JSON.parse(fs.readFileSync(hudFile(home), 'utf8')) as HudRecord;
    if (rec.pid === pid) fs.rmSync(hudFile(home), { force: true });
  } catch {
    // none, or not ours to judge
  }
}

/**
 * The URL of a hud already serving `home`, or null: its record exists, its pid lives, and its /health answers 200
 * within `timeoutMs` (default 1000). Never throws, never waits longer than that.
 */
export async function findRunningHud(home: string, timeoutMs = 1000): Promise<string | null> {
  let rec: HudRecord;
  try {
    rec = JSON.parse(fs.readFileSync(hudFile(home), 'utf8')) as HudRecord;
  } catch {
    return null;
  }
  if (typeof rec.url !== 'string' || !rec.url.startsWith('http://127.0.0.1:') || !pidAlive(rec.pid)) return null;
  try {
    const res = await fetch(new URL('health', rec.url), { signal: AbortSignal.timeout(timeoutMs) });
    return res.ok ? rec.url : null;
  } catch {
    return null;
  }
}
