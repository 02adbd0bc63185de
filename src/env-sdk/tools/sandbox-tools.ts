/**
 * Tools that run code or touch files: `python_exec` and `js_exec` run in the sandbox (its
 * timeout kills the run, so a runaway call really stops), `file_ops` works on the episode's
 * scratch filesystem, which code runs also see as their working directory.
 */
import {
  getSandbox,
  type Sandbox,
  type SandboxLanguage,
  type ScratchFs,
} from "../../sandbox/index";
import type { Tool } from "./toolbox";

export interface SandboxToolOptions {
  scratch: ScratchFs;
  timeoutMs: number;
  memoryMb?: number;
  /** Defaults to the runtime's sandbox (`getSandbox()`). */
  sandbox?: () => Promise<Sandbox>;
}

const OUTPUT_CHARS = 4000;

function codeTool(language: SandboxLanguage, options: SandboxToolOptions): Tool {
  const name = language === "python" ? "python_exec" : "js_exec";
  return {
    // The sandbox stops the run at timeoutMs; the toolbox's own race gets a little more.
    timeoutMs: options.timeoutMs + 1000,
    definition: {
      type: "function",
      function: {
        name,
        description:
          language === "python"
            ? "Run Python 3 (standard library only, no network). Prints are returned; files in the scratch space are in the working directory."
            : "Run a JavaScript function body (no network, no modules). console.log output and the returned value come back; `files` maps scratch file names to contents.",
        parameters: {
          type: "object",
          properties: { code: { type: "string" } },
          required: ["code"],
        },
      },
    },
    run: async (args) => {
      if (typeof args.code !== "string") throw new Error("'code' must be a string");
      const sandbox = await (options.sandbox ?? getSandbox)();
      const result = await sandbox.run({
        language,
        code: args.code,
        timeout_ms: options.timeoutMs,
        memory_mb: options.memoryMb ?? 128,
        files: options.scratch.snapshot(),
        collect_files: true,
      });
      if (result.files) {
        const refused = options.scratch.replaceWith(result.files);
        if (refused.length > 0)
          result.stderr += `\n(files over the scratch limits were dropped: ${refused.join(", ")})`;
      }
      if (result.error)
        throw new Error(`${result.error.kind}: ${result.error.message}`.slice(-OUTPUT_CHARS));
      const value = result.value === null ? "" : `\n=> ${result.value}`;
      return `${result.stdout}${result.stderr ? `\n[stderr]\n${result.stderr}` : ""}${value}`
        .trim()
        .slice(0, OUTPUT_CHARS);
    },
  };
}

export function pythonExecTool(options: SandboxToolOptions): Tool {
  return codeTool("python", options);
}

export function jsExecTool(options: SandboxToolOptions): Tool {
  return codeTool("javascript", options);
}

export function fileOpsTool(scratch: ScratchFs, timeoutMs = 1000): Tool {
  const text = (value: unknown, what: string) => {
    if (typeof value !== "string") throw new Error(`'${what}' must be a string`);
    return value;
  };
  return {
    timeoutMs,
    definition: {
      type: "function",
      function: {
        name: "file_ops",
        description:
          "Files in this episode's scratch space: op 'list', 'read' (path), 'write' (path, content) or 'delete' (path).",
        parameters: {
          type: "object",
          properties: {
            op: { type: "string", enum: ["list", "read", "write", "delete"] },
            path: { type: "string" },
            content: { type: "string" },
          },
          required: ["op"],
        },
      },
    },
    run: (args) => {
      switch (args.op) {
        case "list":
          return JSON.stringify(scratch.list());
        case "read":
          return scratch.read(text(args.path, "path"));
        case "write":
          scratch.write(text(args.path, "path"), text(args.content, "content"));
          return "ok";
        case "delete":
          return scratch.delete(text(args.path, "path")) ? "deleted" : "no such file";
        default:
          throw new Error("'op' must be one of list, read, write, delete");
      }
    },
  };
}
