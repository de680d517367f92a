import fs from 'node:fs';

/**
 * Follows one growing log file (a worker.log) with bounded reads: each `read()` returns what was appended since the
 * last one, but never more than `ringBytes` — when more was written, only the last `ringBytes` are read and
 * `reset` says bytes were dropped. Memory and read size are bounded however fast the writer is. Works on any
 * process's log (it only reads the file). Text is UTF-8; a character cut at the window's front edge becomes U+FFFD.
 */
export class LogTail {
  private offset = 0;
  private started = false;

  constructor(
    readonly file: string,
    readonly ringBytes: number,
  ) {}

  /**
   * The new text, or null when nothing changed (or the file does not exist yet).
   * `reset`: the first read, or the file shrank (rewritten), or bytes between reads were skipped.
   * `totalBytes`: the file's size now.
   */
  read(): { text: string; reset: boolean; totalBytes: number } | null {
    let fd: number;
    try {
      fd = fs.openSync(this.file, 'r');
    } catch {
      return null;
    }
    try {
      const size = fs.fstatSync(fd).size;
      const first = !this.started;
      this.started = true;
      if (size === this.offset && !first) return null;
      let reset = first;
      if (size < this.offset) {
        reset = true;
        this.offset = 0;
      }
      let from = this.offset;
      if (size - from > this.ringBytes) {
        from = size - this.ringBytes;
        reset = true;
      }
      const buf = Buffer.alloc(size - from);
      let got = 0;
      while (got < buf.length) {
        const n = fs.readSync(fd, buf, got, buf.length - got, from + got);
        if (n === 0) break;
        got += n;
      }
      this.offset = from + got;
      // Keep a multi-byte character that straddles the end for the next read.
      let end = got;
      let back = 0;
      while (back < 4 && end - back > 0 && ((buf[end - back - 1] ?? 0) & 0xc0) === 0x80) back++;
      if (back < 4 && end - back > 0) {
        const lead = buf[end - back - 1] ?? 0;
        const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (need > back + 1) end = end - back - 1;
      }
      this.offset -= got - end;
      return { text: buf.subarray(0, end).toString('utf8'), reset, totalBytes: size };
    } finally {
      fs.closeSync(fd);
    }
  }
}

/** The last `maxBytes` of a file and how many bytes were cut before them; null when it cannot be read. */
export function readFileTail(file: string, maxBytes: number): { text: string; truncatedBytes: number } | null {
  const tail = new LogTail(file, maxBytes).read();
  if (!tail) return null;
  return { text: tail.text, truncatedBytes: Math.max(0, tail.totalBytes - maxBytes) };
}
