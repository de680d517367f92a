// Display formatting: durations (ms), token counts, micro-USD, dates. Unknown (null) shows as "—", never 0.
import type { RunWaitView } from '../schemas/protocol';

/** 65_000 → "1m 05s"; under 10 s one decimal (950 → "0.9s", 1_200 → "1.2s"), so a short run never shows "0s". */
export function duration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

/** 12345 → "12.3k". */
export function tokens(n: number | null): string {
  if (n === null) return '—';
  if (n < 1000) return String(n);
  if (n < 1e6) return `${(n / 1e3).toFixed(1)}k`;
  return `${(n / 1e6).toFixed(2)}M`;
}

/** Micro-USD → "$0.0123"; null → "—" (unknown, not free). */
export function cost(micro: number | null): string {
  if (micro === null) return '—';
  const usd = micro / 1e6;
  return `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

/** Epoch ms → "2026-11-01 14:03". */
export function when(ms: number | null): string {
  if (ms === null) return '—';
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** 0.667 → "67%"; null → "—". */
export function percent(rate: number | null): string {
  return rate === null ? '—' : `${Math.round(rate * 100)}%`;
}

/** A run's token total, or "—" when no attempt reported usage (unknown is not 0). */
export function runTokens(run: { tokens: number; tasks: { attempts: { tokensIn: number | null }[] }[] }): string {
  return run.tasks.some((t) => t.attempts.some((a) => a.tokensIn !== null)) ? tokens(run.tokens) : '—';
}

/** Who ran a run: `identity@host`, or just the host when the identity is the host name (the default: "vm", not "vm@vm"). */
export function who(identity: string, host: string): string {
  return identity === host || !host ? identity : `${identity}@${host}`;
}

/** Epoch ms → "14:05" (local time), for a wait's wake-up. */
export function clock(ms: number): string {
  const d = new Date(ms);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

/**
 * The waits (RunView `waits`, by engine) still ahead of `now` (ms), each with its line "waiting for codex until 14:05"
 * and, as `reason` (the line's tooltip), who set it and why: `set by q attempt 1 (its turn.failed event): "<the engine's
 * words>"; <why>` (older hosts send the words alone).
 */
export function activeWaits(waits: Record<string, RunWaitView> | undefined, now: number): { engine: string; reason: string; text: string }[] {
  return Object.entries(waits ?? {})
    .filter(([, w]) => w.until > now)
    .map(([engine, w]) => ({
      engine,
      reason:
        w.task === undefined
          ? w.reason
          : `set by ${w.task} attempt ${w.attempt ?? '?'}${w.source ? ` (${w.source})` : ''}: "${w.reason}"${w.why ? `; ${w.why}` : ''}`,
      text: `waiting for ${engine} until ${clock(w.until)}`,
    }));
}

/** What a line of a unified diff is, for its colour: an added, removed or unchanged line, a hunk header, a file header. */
export type DiffLineKind = 'add' | 'del' | 'context' | 'hunk' | 'meta';

/**
 * Splits `git diff` output into lines (each without its newline) and says what each is. Inside a hunk (after an `@@`
 * line, until the next `diff --git`) a leading `+` is an added line and `-` a removed one, whatever follows — so an
 * added line that reads `++ x` is an addition, not a file header; outside one, every line is file header (`diff --git`,
 * `index`, `---`, `+++`, `new file mode`, `Binary files … differ`…). Text stays text: nothing is interpreted as markup.
 */
export function diffLines(text: string): { kind: DiffLineKind; text: string }[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  let inHunk = false;
  return lines.map((line) => {
    if (line.startsWith('diff --git ')) inHunk = false;
    else if (line.startsWith('@@')) inHunk = true;
    else if (inHunk) {
      const kind: DiffLineKind = line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : 'context';
      return { kind, text: line };
    }
    return { kind: line.startsWith('@@') ? 'hunk' : 'meta', text: line };
  });
}
