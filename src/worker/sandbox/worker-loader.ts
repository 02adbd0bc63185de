/**
 * JavaScript in a Dynamic Worker (the Worker Loader binding): a fresh isolate per run with no
 * outbound network (`globalOutbound: null`), no bindings, a CPU limit and the platform's 128 MB
 * isolate memory. Code is shipped as a module (eval is disallowed in the child) that wraps the
 * user's code in a function, captures `console` and answers one fetch with the result.
 *
 * workerd does not enforce `cpuMs` or memory locally (a busy child blocks the local runtime), so
 * use this adapter deployed and the Node engines (`createLocalSandbox`) on your machine.
 */
import {
  failedRun,
  parseSandboxRequest,
  type Sandbox,
  type SandboxRunInput,
  type SandboxRunResult,
} from "../../env-workers/sandbox/types";

export interface WorkerLoaderSandboxOptions {
  /** Compatibility date of the child isolates (default 2026-04-01). */
  compatibilityDate?: string;
}

export class WorkerLoaderSandbox implements Sandbox {
  constructor(
    private readonly loader: WorkerLoader,
    private readonly options: WorkerLoaderSandboxOptions = {},
  ) {}

  async run(input: SandboxRunInput): Promise<SandboxRunResult> {
    const request = parseSandboxRequest(input);
    if (request.language !== "javascript") {
      return failedRun("unavailable", "Worker Loader runs javascript only", 0);
    }
    const started = Date.now();
    const stub = this.loader.load({
      compatibilityDate: this.options.compatibilityDate ?? "2026-04-01",
      mainModule: "main.js",
      modules: { "main.js": childModule(request.code), "files.json": { json: request.files } },
      env: {},
      globalOutbound: null,
      // CPU time is what a runaway loop consumes; wall time is bounded by the race below.
      limits: { cpuMs: request.timeout_ms, subRequests: 0 },
    });
    const entry = stub.getEntrypoint(undefined, { limits: { cpuMs: request.timeout_ms } });
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const response = await Promise.race([
        entry.fetch("https://sandbox/run"),
        new Promise<"timeout">((resolve) => {
          timer = setTimeout(() => resolve("timeout"), request.timeout_ms + 1000);
        }),
      ]);
      if (response === "timeout") {
        return failedRun(
          "timeout",
          `timed out after ${request.timeout_ms} ms`,
          Date.now() - started,
        );
      }
      const body = (await response.json()) as Omit<SandboxRunResult, "wall_ms">;
      return { ...body, wall_ms: Date.now() - started };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const kind = /cpu|exceeded.*time/i.test(message)
        ? "timeout"
        : /memory/i.test(message)
          ? "memory"
          : "runtime";
      return failedRun(kind, message, Date.now() - started);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The child's module: the user's code as a function body, run once per fetch. */
function childModule(code: string): string {
  return `import initialFiles from "./files.json";
const out = { stdout: "", stderr: "" };
const write = (stream) => (...args) => {
  out[stream] += args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ") + "\\n";
};
export default {
  async fetch() {
    const console = { log: write("stdout"), info: write("stdout"), error: write("stderr"), warn: write("stderr") };
    const files = structuredClone(initialFiles);
    try {
      const value = await (async (console, files) => {
${code}
      })(console, files);
      return Response.json({ ok: true, ...out, value: value === undefined ? null : JSON.stringify(value), error: null, files });
    } catch (err) {
      return Response.json({ ok: false, ...out, value: null, error: { kind: "runtime", message: String(err) } });
    }
  },
};
`;
}
