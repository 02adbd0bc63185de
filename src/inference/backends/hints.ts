/**
 * What a "no such route" 404 means for each server type: the server at that URL is another kind
 * of server, so the error names the `--server-type` (`server_type`) to use instead.
 */
import type { ServerType } from "../../core/wire/server-config";

const OTHERS =
  "--server-type vllm for stock `vllm serve` (base URL ending in /v1), atropos for Atropos' " +
  "vllm_api_server.py, sglang for SGLang, trl for `trl vllm-serve`, openai for any other " +
  "OpenAI-compatible API";

export function notFoundHint(serverType: ServerType, path: string): string {
  switch (serverType) {
    case "vllm":
      return `this is not stock \`vllm serve\` at that base URL (it has no ${path}; check that the URL ends in /v1). Use ${OTHERS}`;
    case "vllm-generate":
      return `this server has no ${path}: vLLM's token-in/token-out endpoint exists only in recent vLLM versions, so use --server-type vllm (its /v1/completions) for this one, or ${OTHERS}`;
    case "atropos":
      return `this is not Atropos' example_trainer/vllm_api_server.py (no POST ${path}). Use ${OTHERS}`;
    case "sglang":
      return `this is not SGLang (no POST ${path}). Use ${OTHERS}`;
    case "trl":
      return `this is not \`trl vllm-serve\` (no POST ${path}). Use ${OTHERS}`;
    case "openai":
      return `there is no ${path} under that base URL: check that it is the API root (e.g. ending in /v1), or use ${OTHERS}`;
  }
}
