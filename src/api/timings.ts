/**
 * Per-request phase timings, reported in the standard `Server-Timing` response header so that
 * slow ingests and batch pulls can be diagnosed from the client (browser dev tools, curl -v).
 */
interface Phase {
  name: string;
  ms: number;
  description?: string;
}

export class Timings {
  private readonly phases: Phase[] = [];

  async measure<T>(name: string, work: () => Promise<T> | T): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.phases.push({ name, ms: performance.now() - started });
    }
  }

  /** A duration measured elsewhere (e.g. by the request that wrote a shared commit). */
  record(name: string, ms: number, description?: string): void {
    this.phases.push({ name, ms, description });
  }

  /** Attaches a description to the latest phase called `name`. */
  describe(name: string, description: string): void {
    const phase = this.phases.findLast((p) => p.name === name);
    if (phase) phase.description = description;
  }

  header(): string {
    return this.phases
      .map(({ name, ms, description }) => {
        const desc = description === undefined ? "" : `;desc="${description.replace(/"/g, "'")}"`;
        return `${name};dur=${ms.toFixed(1)}${desc}`;
      })
      .join(", ");
  }
}
