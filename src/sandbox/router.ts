/** One sandbox made of one engine per language (e.g. Pyodide processes and QuickJS). */
import type { SandboxLanguage } from "../core/wire/sandbox-schemas";
import { failedRun, parseSandboxRequest, type Sandbox, type SandboxRunInput } from "./types";

export class SandboxRouter implements Sandbox {
  constructor(private readonly engines: Partial<Record<SandboxLanguage, Sandbox>>) {}

  async run(input: SandboxRunInput) {
    const request = parseSandboxRequest(input);
    const engine = this.engines[request.language];
    if (!engine) {
      const have = Object.keys(this.engines).join(", ") || "none";
      return failedRun("unavailable", `no ${request.language} engine here (have: ${have})`, 0);
    }
    return engine.run(request);
  }

  async close() {
    await Promise.all(Object.values(this.engines).map((engine) => engine.close?.()));
  }
}
