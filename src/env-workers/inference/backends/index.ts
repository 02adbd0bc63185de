import { OpenAIBackend } from "./openai";
import { SGLangBackend } from "./sglang";
import { TrlBackend } from "./trl";
import type { BackendDeps, InferenceBackend } from "./types";
import { VLLMBackend } from "./vllm";

export type { FetchLike } from "./http";
export { InferenceHttpError, InferenceProtocolError, isRetryableError } from "./http";
export type { BackendDeps, InferenceBackend, TokenGenerationRequest, TokenSupport } from "./types";
export { OpenAIBackend, SGLangBackend, TrlBackend, VLLMBackend };

export function createBackend(deps: BackendDeps): InferenceBackend {
  switch (deps.config.server_type) {
    case "openai":
      return new OpenAIBackend(deps);
    case "vllm":
      return new VLLMBackend(deps);
    case "sglang":
      return new SGLangBackend(deps);
    case "trl":
      return new TrlBackend(deps);
  }
}
