import type { TokenGenerationRequest } from "./types";

/** Sampling parameters in the vLLM/OpenAI spelling; undefined ones are left out. */
export function samplingParams(
  request: TokenGenerationRequest,
  maxTokensKey = "max_tokens",
): Record<string, unknown> {
  const params: Record<string, unknown> = { ...request.extra, n: request.n };
  const set = (key: string, value: unknown) => {
    if (value !== undefined) params[key] = value;
  };
  set(maxTokensKey, request.maxTokens);
  set("temperature", request.temperature);
  set("top_p", request.topP);
  set("stop", request.stop);
  set("seed", request.seed);
  return params;
}
