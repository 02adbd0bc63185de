/**
 * The tools agent_tasks can offer (its `tools` config picks among them): calculator and a
 * key-value store, code runs in the sandbox (`python_exec`, `js_exec`), the episode's scratch
 * files (`file_ops`) and `web_search` (offline BM25 by default). One toolbox per episode: the
 * store and the scratch filesystem are the episode's own.
 */
import {
  allowedTools,
  fileOpsTool,
  jsExecTool,
  pythonExecTool,
  ScratchFs,
  type Tool,
  Toolbox,
  z,
} from "../../sdk/env";
import { standardTools } from "./standard-tools";
import { type SearchBackend, WebSearchConfigSchema, webSearchTool } from "./web-search";

/** Config fields of the tools (spread into agent_tasks' config schema). */
export const AGENT_TOOL_CONFIG = {
  tool_timeout_ms: z.number().int().positive().default(1000),
  /** Limit of one python_exec / js_exec run (the sandbox kills it at this time). */
  code_timeout_ms: z.number().int().positive().max(60_000).default(5000),
  code_memory_mb: z.number().int().positive().max(1024).default(128),
  search_timeout_ms: z.number().int().positive().default(10_000),
  /** web_search's backend: offline BM25 over the bundled corpus, or a search API. */
  web_search: WebSearchConfigSchema.default({ backend: "bm25", max_results: 3 }),
};

const ToolConfigSchema = z.object(AGENT_TOOL_CONFIG);
export type AgentToolConfig = z.output<typeof ToolConfigSchema>;

export interface AgentToolDeps {
  /** Replaces web_search's backend (tests, a search service of your own). */
  searchBackend?: SearchBackend;
}

function allAgentTools(config: AgentToolConfig, deps: AgentToolDeps): Record<string, Tool> {
  const scratch = new ScratchFs();
  const code = { scratch, timeoutMs: config.code_timeout_ms, memoryMb: config.code_memory_mb };
  return {
    ...standardTools(new Map(), config.tool_timeout_ms),
    python_exec: pythonExecTool(code),
    js_exec: jsExecTool(code),
    file_ops: fileOpsTool(scratch, config.tool_timeout_ms),
    web_search: webSearchTool(config.web_search, config.search_timeout_ms, deps.searchBackend),
  };
}

/** Every tool name agent_tasks knows. */
export const AGENT_TOOL_NAMES: readonly string[] = Object.keys(
  allAgentTools(ToolConfigSchema.parse({}), {}),
);

/** Throws naming the unknown tools and the known ones. */
export function checkAgentTools(names: readonly string[]): void {
  const unknown = names.filter((t) => !AGENT_TOOL_NAMES.includes(t));
  if (unknown.length > 0) {
    throw new Error(
      `agent_tasks: unknown tool ${unknown.join(", ")} (this env provides ${AGENT_TOOL_NAMES.join(", ")})`,
    );
  }
}

/** A fresh toolbox for one episode with the allowed tools, in the order given. */
export function agentToolbox(
  config: AgentToolConfig,
  allow: readonly string[],
  deps: AgentToolDeps = {},
): Toolbox {
  return new Toolbox(allowedTools(allAgentTools(config, deps), allow));
}
