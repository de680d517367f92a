/**
 * Keeps the last `capacityBytes` bytes of a stream of text chunks, for live views and retry prompts.
 * Memory is bounded by the capacity plus one chunk. Text is decoded as UTF-8; a multi-byte character cut at the
 * front edge is replaced by U+FFFD.
 */
export class RingBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Total bytes ever pushed. */
  totalBytes = 0;

  constructor(readonly capacityBytes: number) {}

  push(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - (this.chunks[0]?.length ?? 0) >= this.capacityBytes) {
      this.size -= this.chunks.shift()?.length ?? 0;
    }
  }

  /** The retained tail as text, at most `capacityBytes` bytes of it. */
  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.capacityBytes)).toString('utf8');
  }
}
