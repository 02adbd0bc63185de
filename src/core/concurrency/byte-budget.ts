/**
 * A per-isolate memory budget for request processing: work that will hold about `bytes` of memory
 * waits (first come, first served) until the bytes in use plus its own fit under the limit. Work
 * larger than the whole limit runs alone. Waiters poll on their own timer rather than being woken
 * by another request (same reason as in group-commit.ts: every request stays in its own context).
 */
export class ByteBudget {
  private inUse = 0;
  private readonly queue: { bytes: number }[] = [];

  constructor(
    readonly limitBytes: number,
    private readonly pollMs = 2,
  ) {}

  /** Runs `work` once `bytes` fit in the budget; releases them when it settles. */
  async run<T>(bytes: number, work: () => Promise<T>): Promise<T> {
    const ticket = { bytes: Math.max(0, Math.min(bytes, this.limitBytes)) };
    this.queue.push(ticket);
    while (this.queue[0] !== ticket || this.inUse + ticket.bytes > this.limitBytes) {
      await new Promise((resolve) => setTimeout(resolve, this.pollMs));
    }
    this.queue.shift();
    this.inUse += ticket.bytes;
    try {
      return await work();
    } finally {
      this.inUse -= ticket.bytes;
    }
  }

  /** Bytes currently reserved (for tests and diagnostics). */
  get reserved(): number {
    return this.inUse;
  }

  get waiting(): number {
    return this.queue.length;
  }
}
