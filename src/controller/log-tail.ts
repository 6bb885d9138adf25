/** @module A byte ring of the last N bytes an agent wrote to stdout and stderr, kept for its failure `log` event. */

/** Keeps the last `limitBytes` bytes written to it (stdout and stderr interleaved as they arrive). */
export class LogTail {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes dropped from the front because the tail was full. */
  droppedBytes = 0;

  /** @param limitBytes - bytes kept; 0 keeps nothing */
  constructor(private readonly limitBytes: number) {}

  /** Appends a chunk, dropping the oldest bytes beyond the limit. */
  push(chunk: Buffer): void {
    if (this.limitBytes === 0) {
      this.droppedBytes += chunk.length;
      return;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.limitBytes) {
      const first = this.chunks[0]!;
      const excess = this.size - this.limitBytes;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
        this.droppedBytes += first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
        this.droppedBytes += excess;
      }
    }
  }

  /** @returns the kept bytes decoded as UTF-8 (a multi-byte character cut at the front becomes U+FFFD) */
  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}
