/**
 * Per-request phase timings, reported in the standard `Server-Timing` response header so that
 * slow ingests and batch pulls can be diagnosed from the client (browser dev tools, curl -v).
 */
export class Timings {
  private readonly phases: [string, number][] = [];

  async measure<T>(name: string, work: () => Promise<T> | T): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.phases.push([name, performance.now() - started]);
    }
  }

  header(): string {
    return this.phases.map(([name, ms]) => `${name};dur=${ms.toFixed(1)}`).join(", ");
  }
}
