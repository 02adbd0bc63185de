import { AtroposBackend } from "./atropos";
import { OpenAIBackend } from "./openai";
import { SGLangBackend } from "./sglang";
import { TrlBackend } from "./trl";
import type { BackendDeps, InferenceBackend } from "./types";
import { VLLMBackend, VLLMGenerateBackend } from "./vllm";

export type { FetchLike } from "./http";
export {
  InferenceHttpError,
  InferenceMismatchError,
  InferenceProtocolError,
  isRetryableError,
} from "./http";
export type {
  BackendDeps,
  ChatWithTokens,
  InferenceBackend,
  TokenGenerationRequest,
  TokenSupport,
} from "./types";
export {
  AtroposBackend,
  OpenAIBackend,
  SGLangBackend,
  TrlBackend,
  VLLMBackend,
  VLLMGenerateBackend,
};

export function createBackend(deps: BackendDeps): InferenceBackend {
  switch (deps.config.server_type) {
    case "openai":
      return new OpenAIBackend(deps);
    case "vllm":
      // A config parsed before vllm_mode was folded into server_type (parseServerConfig).
      return deps.config.vllm_mode === "generate"
        ? new AtroposBackend(deps)
        : new VLLMBackend(deps);
    case "vllm-generate":
      return new VLLMGenerateBackend(deps);
    case "atropos":
      return new AtroposBackend(deps);
    case "sglang":
      return new SGLangBackend(deps);
    case "trl":
      return new TrlBackend(deps);
  }
}
