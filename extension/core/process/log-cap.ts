/**
 * Output caps for step logs (worker.log, check.log, …): nothing stops a step from writing gigabytes to its output. A
 * capped step's output reaches its log through the spawn helper's relay (spawner.ts, SpawnRequest.relay), so the helper
 * is the log's one writer. The supervisor keeps each step's part of the log within `log_max_mb`: once it grows past the
 * cap, the helper is asked to hold the relay (Spawned.hold: the step blocks once the relay is full), and the log is
 * compacted in place — its head stays, a line says how many bytes were cut, and the latest part of the output follows —
 * and truncated after it; then the relay is released and the helper writes on at the new end.
 *
 * Nothing writes the log during a compaction, so nothing is lost and the count is exact. (An earlier design let the step
 * write the file itself: a write landing between the compaction's last look at the size and its truncation was cut off
 * uncounted, and once the last lines of a 1 GiB flood.) A step can still grow its log past the cap by what it writes
 * between two looks (the supervisor looks every TAIL_POLL_MS); once it has ended the log is compacted one last time.
 */
import fs from 'node:fs';

/** The default most a step's log keeps, MB. */
export const DEFAULT_LOG_MAX_MB = 64;
/** The smallest and largest `log_max_mb`, MB. */
export const MIN_LOG_MAX_MB = 1;
export const MAX_LOG_MAX_MB = 16384;

/** Width of the cut count in the cut line: the line keeps its length when it is rewritten with a larger count. */
const COUNT_WIDTH = 20;
/** Bytes copied at a time while the tail is moved down. */
const COPY_CHUNK_BYTES = 1024 * 1024;

/** The line between a compacted log's head and its tail (fixed length for one `maxBytes`). Pure. */
export function cutLine(cutBytes: number, maxBytes: number): string {
  const count = String(cutBytes).padEnd(COUNT_WIDTH);
  return `\n[verdict] ${count} bytes of output were cut here: a step's log keeps at most ${Math.round(maxBytes / (1024 * 1024))} MB (log_max_mb), its head and its tail\n`;
}

/** One step's part of a log, kept within a cap ({@link LogCap.compact}). */
export class LogCap {
  /** Bytes cut so far (the line says so). */
  cutBytes = 0;
  private readonly headBytes: number;
  private readonly keepBytes: number;
  private readonly lineBytes: number;

  /**
   * @param fd the log, open for reading and writing (not O_APPEND: the compaction writes at offsets)
   * @param start where the step's part of the log begins, bytes (earlier steps' output before it is left alone)
   * @param maxBytes the most the step's part may hold, bytes (at least 1 MiB)
   */
  constructor(
    private readonly fd: number,
    private readonly start: number,
    readonly maxBytes: number,
  ) {
    this.headBytes = Math.floor(maxBytes / 4);
    this.keepBytes = Math.floor(maxBytes / 4);
    this.lineBytes = Buffer.byteLength(cutLine(0, maxBytes));
  }

  /** Whether the step's part of the log is over its cap now. */
  over(size: number): boolean {
    return size - this.start > this.maxBytes;
  }

  /**
   * Compacts the log when its part is over the cap: keeps the head (a quarter of the cap), the cut line, and the last
   * quarter of the cap's bytes, and truncates after them. Nothing may write the log meanwhile (its writer is held, or
   * the step has ended): what it wrote would be cut uncounted. `readTo`: the offset up to which the caller has read the
   * log (its live view); bytes past it that are kept are handed to `unread` in order, before the call returns.
   * @returns `end`: the log's new size (the caller reads on from there); `seen`: its size before (every byte below it
   *   is either kept or cut); null when it was not over the cap
   * @throws the fs error when the log cannot be read, written or truncated
   */
  compact(readTo: number, unread: (chunk: Buffer) => void): { end: number; seen: number } | null {
    const size = fs.fstatSync(this.fd).size;
    if (!this.over(size)) return null;
    const cutAt = this.start + this.headBytes;
    // What was kept after the line by an earlier compaction is part of what may be cut now.
    const keptFrom = this.cutBytes > 0 ? cutAt + this.lineBytes : cutAt;
    let from = size - this.keepBytes;
    let to = cutAt + this.lineBytes;
    this.cutBytes += from - keptFrom;
    fs.writeSync(this.fd, cutLine(this.cutBytes, this.maxBytes), cutAt);
    const buf = Buffer.allocUnsafe(COPY_CHUNK_BYTES);
    // Moved down in order (the destination is always below the source).
    while (from < size) {
      const n = fs.readSync(this.fd, buf, 0, Math.min(buf.length, size - from), from);
      if (n <= 0) break;
      if (from + n > readTo) unread(Buffer.from(buf.subarray(Math.max(0, readTo - from), n)));
      for (let at = 0; at < n;) at += fs.writeSync(this.fd, buf, at, n - at, to + at);
      from += n;
      to += n;
    }
    fs.ftruncateSync(this.fd, to);
    return { end: to, seen: size };
  }
}
