/**
 * Python and JavaScript in a Cloudflare Sandbox (a container per sandbox id, `@cloudflare/sandbox`).
 * Typed against the SDK's stub structurally, so this package does not depend on the SDK; a
 * project that deploys containers passes its own `getSandbox`:
 *
 *     import { getSandbox } from "@cloudflare/sandbox";
 *     const python = new CloudflareContainerSandbox((id) => getSandbox(env.Sandbox, id));
 *
 * Each run gets its own directory; the command runs under `timeout -s KILL` and `ulimit -v`
 * inside the container. The container's network is the project's to close: set
 * `enableInternet = false` on its Sandbox class. This adapter cannot run without Docker and an
 * account, so nothing in this repository's test suite executes it; it type-checks here.
 */
import { errorMessage } from "../../core/errors";
import {
  SANDBOX_COLLECT_MAX_CHARS,
  SANDBOX_COLLECT_MAX_FILES,
  SANDBOX_OUTPUT_CAP_CHARS,
} from "../../core/wire/sandbox-schemas";
import {
  failedRun,
  parseSandboxRequest,
  type Sandbox,
  type SandboxRunInput,
  type SandboxRunResult,
} from "../../sandbox/types";

/** What this adapter uses of `@cloudflare/sandbox`'s `getSandbox(...)` stub. */
export interface ContainerSandboxStub {
  exec(
    command: string,
    options?: { timeout?: number },
  ): Promise<{ stdout: string; stderr: string; exitCode?: number; success: boolean }>;
  writeFile(path: string, content: string): Promise<unknown>;
  readFile(path: string): Promise<{ content: string }>;
}

export interface CloudflareContainerSandboxOptions {
  /** Sandbox ids runs are spread over (default 1: one warm container). */
  instances?: number;
  /** Interpreters in the image (defaults: python3, node). */
  pythonCommand?: string;
  nodeCommand?: string;
}

const EXIT_KILLED = 137;
const EXIT_TIMEOUT = 124;

export class CloudflareContainerSandbox implements Sandbox {
  private next = 0;

  constructor(
    private readonly sandboxFor: (id: string) => ContainerSandboxStub,
    private readonly options: CloudflareContainerSandboxOptions = {},
  ) {}

  async run(input: SandboxRunInput): Promise<SandboxRunResult> {
    const request = parseSandboxRequest(input);
    const started = Date.now();
    const instances = Math.max(1, this.options.instances ?? 1);
    const sandbox = this.sandboxFor(`atropos-sandbox-${this.next++ % instances}`);
    const dir = `/tmp/run-${crypto.randomUUID()}`;
    const main = request.language === "python" ? "main.py" : "main.mjs";
    const interpreter =
      request.language === "python"
        ? (this.options.pythonCommand ?? "python3")
        : (this.options.nodeCommand ?? "node");
    const seconds = Math.ceil(request.timeout_ms / 1000);
    try {
      for (const [name, content] of Object.entries(request.files)) {
        await sandbox.writeFile(`${dir}/${name}`, content);
      }
      await sandbox.writeFile(`${dir}/${main}`, request.code);
      const result = await sandbox.exec(
        `cd ${dir} && ulimit -v ${request.memory_mb * 1024} && timeout -s KILL ${seconds} ${interpreter} ${main}`,
        { timeout: request.timeout_ms + 5000 },
      );
      const wall = Date.now() - started;
      const files = request.collect_files ? await collect(sandbox, dir, main) : undefined;
      await sandbox.exec(`rm -rf ${dir}`).catch(() => undefined);
      const output = {
        stdout: result.stdout.slice(0, SANDBOX_OUTPUT_CAP_CHARS),
        stderr: result.stderr.slice(-SANDBOX_OUTPUT_CAP_CHARS),
      };
      if (result.exitCode === EXIT_KILLED || result.exitCode === EXIT_TIMEOUT) {
        return failedRun("timeout", `timed out after ${request.timeout_ms} ms`, wall, output);
      }
      if (!result.success) {
        const memory = /MemoryError|out of memory|Cannot allocate/i.test(result.stderr);
        return failedRun(memory ? "memory" : "runtime", lastLines(result.stderr), wall, output);
      }
      return {
        ok: true,
        ...output,
        value: null,
        error: null,
        wall_ms: wall,
        ...(files ? { files } : {}),
      };
    } catch (err) {
      const message = errorMessage(err);
      return failedRun("unavailable", `container sandbox: ${message}`, Date.now() - started);
    }
  }
}

async function collect(sandbox: ContainerSandboxStub, dir: string, main: string) {
  // At most SANDBOX_COLLECT_MAX_FILES files of under 1 MiB, cut to SANDBOX_COLLECT_MAX_CHARS in all.
  const listing = await sandbox.exec(
    `cd ${dir} && find . -type f -size -1024k | sort | head -${SANDBOX_COLLECT_MAX_FILES + 1}`,
  );
  const files: Record<string, string> = {};
  let room = SANDBOX_COLLECT_MAX_CHARS;
  for (const line of listing.stdout.split("\n")) {
    const name = line.trim().replace(/^\.\//, "");
    if (!name || name === main) continue;
    if (room <= 0 || Object.keys(files).length >= SANDBOX_COLLECT_MAX_FILES) break;
    const content = (await sandbox.readFile(`${dir}/${name}`)).content.slice(0, room);
    files[name] = content;
    room -= content.length;
  }
  return files;
}

function lastLines(text: string): string {
  return text.trim().split("\n").slice(-20).join("\n");
}
