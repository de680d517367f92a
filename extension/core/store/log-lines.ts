import fs from 'node:fs';

/** One complete line of a JSONL file, with where it starts. */
export interface LogLine {
  /** The line without its trailing newline. */
  text: string;
  /** Byte offset of the line's first byte in the file. */
  offset: number;
}

/** Bytes read per chunk. */
const CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Reads the complete lines of `file` from byte `fromOffset` on and hands each to `onLine`, in order. A trailing
 * line without its newline is a row still being written (appendEvalRow writes a line in one write(2), but a reader
 * may see it half-way): it is never consumed, and the returned offset stops before it.
 * @returns the byte offset just past the last complete line (== fromOffset when nothing new)
 * @throws Error from the filesystem other than a missing file (a missing file has no lines)
 */
export function readCompleteLines(file: string, fromOffset: number, onLine: (line: LogLine) => void): number {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return fromOffset;
    throw e;
  }
  try {
    const size = fs.fstatSync(fd).size;
    let pos = fromOffset;
    let pending: Buffer | null = null;
    let pendingStart = fromOffset;
    const buf = Buffer.alloc(CHUNK_BYTES);
    while (pos < size) {
      const n = fs.readSync(fd, buf, 0, Math.min(CHUNK_BYTES, size - pos), pos);
      if (n <= 0) break;
      const chunk: Buffer = pending ? Buffer.concat([pending, buf.subarray(0, n)]) : buf.subarray(0, n);
      const chunkStart = pending ? pendingStart : pos;
      pos += n;
      let start = 0;
      for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
        onLine({ text: chunk.toString('utf8', start, nl), offset: chunkStart + start });
        start = nl + 1;
      }
      pending = start < chunk.length ? Buffer.from(chunk.subarray(start)) : null;
      pendingStart = chunkStart + start;
    }
    return pending ? pendingStart : pos;
  } finally {
    fs.closeSync(fd);
  }
}

/** The size of `file` in bytes; 0 when it does not exist. */
export function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}
