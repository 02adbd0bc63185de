/**
 * A whitelist of tools with per-call timeouts. Each call is measured and never throws: errors come
 * back as `{error}` so the episode can continue and the step can be penalised.
 */
import type { ToolDefinition } from "../../sdk/env";
import { calculate, formatNumber } from "./calculator";

export interface ToolResult {
  result: string | null;
  error: string | null;
  latency_ms: number;
}

export interface Tool {
  definition: ToolDefinition;
  timeoutMs: number;
  run(args: Record<string, unknown>): Promise<string> | string;
}

export class Toolbox {
  constructor(
    private readonly tools: Record<string, Tool>,
    private readonly now: () => number = () => Date.now(),
  ) {}

  definitions(): ToolDefinition[] {
    return Object.values(this.tools).map((t) => t.definition);
  }

  async call(name: string, args: Record<string, unknown>): Promise<ToolResult> {
    const started = this.now();
    const tool = Object.hasOwn(this.tools, name) ? this.tools[name] : undefined;
    if (!tool) return { result: null, error: `tool '${name}' is not allowed`, latency_ms: 0 };
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const result = await Promise.race([
        Promise.resolve().then(() => tool.run(args)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`timed out after ${tool.timeoutMs} ms`)),
            tool.timeoutMs,
          );
        }),
      ]);
      return { result, error: null, latency_ms: this.now() - started };
    } catch (err) {
      return {
        result: null,
        error: err instanceof Error ? err.message : String(err),
        latency_ms: this.now() - started,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Only the tools an env's config allows, in the order given; an unknown name is a config error
 * that lists the known ones.
 */
export function allowedTools(
  all: Record<string, Tool>,
  allow: readonly string[],
): Record<string, Tool> {
  const picked: Record<string, Tool> = {};
  for (const name of allow) {
    const tool = Object.hasOwn(all, name) ? all[name] : undefined;
    if (!tool) throw new Error(`unknown tool '${name}' (known: ${Object.keys(all).join(", ")})`);
    picked[name] = tool;
  }
  return picked;
}

/** calculator + kv_get/kv_set over a per-episode store. */
export function standardTools(store: Map<string, string>, timeoutMs = 1000): Record<string, Tool> {
  const str = (v: unknown, what: string) => {
    if (typeof v !== "string" && typeof v !== "number")
      throw new Error(`'${what}' must be a string`);
    return String(v);
  };
  return {
    calculator: {
      timeoutMs,
      definition: {
        type: "function",
        function: {
          name: "calculator",
          description:
            "Evaluate an arithmetic expression (+ - * / % ^, parentheses, sqrt, min, max…).",
          parameters: {
            type: "object",
            properties: { expression: { type: "string" } },
            required: ["expression"],
          },
        },
      },
      run: (args) => formatNumber(calculate(str(args.expression, "expression"))),
    },
    kv_set: {
      timeoutMs,
      definition: {
        type: "function",
        function: {
          name: "kv_set",
          description: "Store a value under a key.",
          parameters: {
            type: "object",
            properties: { key: { type: "string" }, value: { type: "string" } },
            required: ["key", "value"],
          },
        },
      },
      run: (args) => {
        const key = str(args.key, "key");
        if (store.size >= 100 && !store.has(key)) throw new Error("store is full");
        store.set(key, str(args.value, "value").slice(0, 1000));
        return "ok";
      },
    },
    kv_get: {
      timeoutMs,
      definition: {
        type: "function",
        function: {
          name: "kv_get",
          description: "Read the value stored under a key.",
          parameters: {
            type: "object",
            properties: { key: { type: "string" } },
            required: ["key"],
          },
        },
      },
      run: (args) => {
        const key = str(args.key, "key");
        const v = store.get(key);
        if (v === undefined) throw new Error(`no value under '${key}'`);
        return v;
      },
    },
  };
}
