/**
 * Output caps for step logs (worker.log, check.log, …): a step's output is appended to its log by the step itself (the
 * file is its stdout, opened with O_APPEND by the spawn helper), so nothing stops a step from writing gigabytes there.
 * The supervisor keeps each step's part of the log within `log_max_mb`: once it grows past the cap, the log is compacted
 * in place — its head stays, a line says how many bytes were cut, and the latest part of the output follows — and
 * truncated after it. The step's next write lands at the new end (O_APPEND writes at the end of the file as it is at the
 * write: open(2)), so the step never notices.
 *
 * A write the step makes between the compaction's last look at the file's size and its truncation is lost (the
 * truncation cuts it off) and is not counted: the line then says "at least". A step can grow its log past the cap by
 * what it writes between two looks (the supervisor looks every TAIL_POLL_MS); once it has ended the log is compacted one
 * last time, exactly.
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
export function cutLine(cutBytes: number, maxBytes: number, exact: boolean): string {
  const count = `${exact ? '' : 'at least '}${cutBytes}`.padEnd(COUNT_WIDTH + 'at least '.length);
  return `\n[verdict] ${count} bytes of output were cut here: a step's log keeps at most ${Math.round(maxBytes / (1024 * 1024))} MB (log_max_mb), its head and its tail\n`;
}

/** One step's part of a log, kept within a cap ({@link LogCap.compact}). */
export class LogCap {
  /** Bytes cut so far (the line says so). */
  cutBytes = 0;
  /** Whether a write may have been lost uncounted (a compaction while the step ran). */
  private inexact = false;
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
    this.lineBytes = Buffer.byteLength(cutLine(0, maxBytes, false));
  }

  /** Whether the step's part of the log is over its cap now. */
  over(size: number): boolean {
    return size - this.start > this.maxBytes;
  }

  /**
   * Compacts the log when its part is over the cap: keeps the head (a quarter of the cap), the cut line, and the last
   * quarter of the cap's bytes, and truncates after them. `readTo`: the offset up to which the caller has read the log
   * (its live view); bytes past it that are kept are handed to `unread` in order, before the call returns. `final`: the
   * step has ended (nothing writes any more), so the count is exact.
   * @returns `end`: the log's new size (the caller reads on from there); `seen`: the size the log had when it was last
   *   looked at, before the truncation (every byte below it is either kept or cut); null when it was not over the cap
   * @throws the fs error when the log cannot be read, written or truncated
   */
  compact(readTo: number, unread: (chunk: Buffer) => void, final: boolean): { end: number; seen: number } | null {
    let size = fs.fstatSync(this.fd).size;
    if (!this.over(size)) return null;
    const cutAt = this.start + this.headBytes;
    // What was kept after the line by an earlier compaction is part of what may be cut now.
    const keptFrom = this.cutBytes > 0 || this.inexact ? cutAt + this.lineBytes : cutAt;
    let from = size - this.keepBytes;
    let to = cutAt + this.lineBytes;
    this.cutBytes += from - keptFrom;
    if (!final) this.inexact = true;
    // The line first: between the last look at the size and the truncation nothing else is done (a write landing
    // there is lost).
    fs.writeSync(this.fd, cutLine(this.cutBytes, this.maxBytes, !this.inexact), cutAt);
    const buf = Buffer.allocUnsafe(COPY_CHUNK_BYTES);
    // Moved down in order (the destination is always below the source); then whatever the step appended meanwhile.
    for (let round = 0; round < 8; round++) {
      while (from < size) {
        const n = fs.readSync(this.fd, buf, 0, Math.min(buf.length, size - from), from);
        if (n <= 0) break;
        if (from + n > readTo) unread(Buffer.from(buf.subarray(Math.max(0, readTo - from), n)));
        for (let at = 0; at < n;) at += fs.writeSync(this.fd, buf, at, n - at, to + at);
        from += n;
        to += n;
      }
      const now = fs.fstatSync(this.fd).size;
      if (now === size) break;
      size = now;
    }
    fs.ftruncateSync(this.fd, to);
    return { end: to, seen: size };
  }
}
