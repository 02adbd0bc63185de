/**
 * A whitelist of tools with per-call timeouts. Each call is measured and never throws: errors come
 * back as `{error}` so the episode can continue and the step can be penalised.
 */
import { errorMessage } from "../../core/errors";
import type { ToolDefinition } from "../../core/wire/group-types";

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
        error: errorMessage(err),
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
