/**
 * Atropos' AsyncSemWithAdaptiveWeight (docs/INFERENCE.md): a counting semaphore whose usable share
 * is scaled by `weight`. Acquisition is blocked while `value <= capacity × (1 − weight)`, so the
 * effective concurrency is ≈ ceil(capacity × weight) (10 slots: weights 1/0.5/0.2/0.05 → 10/5/2/1).
 */
export class AdaptiveSemaphore {
  private value: number;
  private weight = 1;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly capacity: number) {
    this.value = capacity;
  }

  /** Slots below which acquisition blocks. */
  get minValue(): number {
    return this.capacity * (1 - this.weight);
  }

  /** Free slots under the current weight (may be fractional or negative). */
  get available(): number {
    return this.value - this.minValue;
  }

  get inUse(): number {
    return this.capacity - this.value;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  setWeight(weight: number): void {
    // A weight of 0 would block forever; Atropos' floor is 0.01.
    this.weight = Math.min(1, Math.max(0.01, weight));
    this.drain();
  }

  /** Takes a slot now if one is free (never queues). */
  tryAcquire(): boolean {
    if (this.waiters.length > 0 || this.value <= this.minValue) return false;
    this.value--;
    return true;
  }

  /** The slot is taken synchronously when free, so routing decisions see it at once. */
  acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const index = this.waiters.indexOf(grant);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(grant);
    });
  }

  release(): void {
    this.value = Math.min(this.capacity, this.value + 1);
    this.drain();
  }

  private drain(): void {
    while (this.waiters.length > 0 && this.value > this.minValue) {
      this.value--;
      this.waiters.shift()?.();
    }
  }
}
