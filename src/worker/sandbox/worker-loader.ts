/**
 * JavaScript in a Dynamic Worker (the Worker Loader binding): a fresh isolate per run with no
 * outbound network (`globalOutbound: null`), no bindings, a CPU limit and the platform's 128 MB
 * isolate memory. Code is shipped as a module (eval is disallowed in the child) that wraps the
 * user's code in a function, captures `console` and answers one fetch with the result.
 *
 * workerd does not enforce `cpuMs` or memory locally (a busy child blocks the local runtime), so
 * use this adapter deployed and the Node engines (`createLocalSandbox`) on your machine.
 */
import { errorMessage } from "../../core/errors";
import {
  SANDBOX_ANSWER_LIMITS,
  SANDBOX_OUTPUT_CAP_CHARS,
  sandboxRunResultSchema,
} from "../../core/wire/sandbox-schemas";
import {
  failedRun,
  parseSandboxRequest,
  type Sandbox,
  type SandboxRunInput,
  type SandboxRunResult,
} from "../../sandbox/types";

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
      // The child cuts its answer to the caps; one that is larger or malformed anyway fails the
      // run here instead of taking this isolate's memory.
      const text = await readCapped(response, MAX_ANSWER_BYTES);
      const wallMs = Date.now() - started;
      if (text === null) {
        return failedRun("runtime", `the run's answer was over ${MAX_ANSWER_BYTES} bytes`, wallMs);
      }
      const parsed = answerSchema.safeParse(safeJson(text));
      if (!parsed.success) return failedRun("runtime", "the run's answer was malformed", wallMs);
      return { ...parsed.data, wall_ms: wallMs };
    } catch (err) {
      const message = errorMessage(err);
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

/** Bytes of a child's answer this isolate reads: capped output, value and files, JSON-escaped. */
const MAX_ANSWER_BYTES =
  6 *
    (2 * SANDBOX_OUTPUT_CAP_CHARS +
      SANDBOX_ANSWER_LIMITS.value_chars +
      SANDBOX_ANSWER_LIMITS.collect_chars) +
  65_536;
const answerSchema = sandboxRunResultSchema.omit({ wall_ms: true });

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The body as text, or null when it is longer than `maxBytes` (a declared length is checked first). */
async function readCapped(response: Response, maxBytes: number): Promise<string | null> {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body?.cancel();
    return null;
  }
  const text = await response.text();
  return text.length > maxBytes ? null : text;
}

/**
 * The child's module: the user's code as a function body, run once per fetch. Output, the value,
 * the error and the files are cut to the sandbox's caps with natives taken before the code runs,
 * so code that replaces `String.prototype.slice`, `JSON` or `Response.json` cannot undo the caps.
 */
function childModule(code: string): string {
  return `import initialFiles from "./files.json";
const LIMITS = Object.freeze(${JSON.stringify(SANDBOX_ANSWER_LIMITS)});
const S = String, stringify = JSON.stringify, apply = Reflect.apply, slice = String.prototype.slice;
const keys = Object.keys, respond = Response.json.bind(Response), min = Math.min;
const cut = (s, n) => (s.length > n ? apply(slice, s, [0, n]) : s);
const text = (a) => {
  if (typeof a === "string") return a;
  try { const json = stringify(a); return json === undefined ? S(a) : json; }
  catch { try { return S(a); } catch { return "[unprintable]"; } }
};
const errorText = (err) => { try { return S(err); } catch { return "[unprintable]"; } };
const out = { stdout: "", stderr: "" };
const write = (stream) => (...args) => {
  const room = LIMITS.output_chars - out[stream].length;
  if (room <= 0) return;
  let line = "";
  for (let i = 0; i < args.length && line.length < room; i++) line += (i > 0 ? " " : "") + cut(text(args[i]), room);
  out[stream] += cut(line + "\\n", room);
};
const capFiles = (all) => {
  const files = {};
  let room = LIMITS.collect_chars, count = 0, left = 0;
  try {
    for (const name of all !== null && typeof all === "object" ? keys(all) : []) {
      if (count >= LIMITS.collect_files || room <= 0) { left++; continue; }
      let content;
      try { content = text(all[name]); } catch { content = "[unreadable]"; }
      if (content.length > room) left++;
      files[cut(name, 256)] = cut(content, room);
      room -= min(content.length, room);
      count++;
    }
  } catch { left++; }
  if (left > 0) out.stderr += "\\n[sandbox] collected files cut at " + LIMITS.collect_files + " files and " + LIMITS.collect_chars + " characters in all (" + left + " files cut or left out)\\n";
  return files;
};
// The code shares this module's scope and can reach \`out\`: what leaves is cut once more here.
const output = () => ({ stdout: cut(S(out.stdout), LIMITS.output_chars), stderr: cut(S(out.stderr), LIMITS.output_chars + 512) });
const failure = (message) => respond({ ok: false, ...output(), value: null, error: { kind: "runtime", message: cut(message, 4000) } });
export default {
  async fetch() {
    const console = { log: write("stdout"), info: write("stdout"), error: write("stderr"), warn: write("stderr") };
    const files = structuredClone(initialFiles);
    try {
      const value = await (async (console, files) => {
${code}
      })(console, files);
      let json;
      try { json = value === undefined ? null : stringify(value) ?? null; } catch (err) { return failure(errorText(err)); }
      if (json !== null && json.length > LIMITS.value_chars) {
        return failure("the returned value is " + json.length + " characters as JSON, more than the cap of " + LIMITS.value_chars);
      }
      const collected = capFiles(files);
      return respond({ ok: true, ...output(), value: json, error: null, files: collected });
    } catch (err) {
      return failure(errorText(err));
    }
  },
};
`;
}
