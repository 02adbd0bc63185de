import type { TokensAndLogprobs } from "../types";
import {
  asArray,
  asRecord,
  flattenFinishReason,
  InferenceProtocolError,
  probe,
  rootUrl,
} from "./http";
import { OpenAITextBackend } from "./openai";
import { resolveSampling, sglangSamplingParams } from "./sampling";
import { sameIds, sampledLogprob, tokenIdList } from "./tokens";
import type { BackendDeps, CallOptions, InferenceBackend, TokenGenerationRequest } from "./types";

/** SGLang: OpenAI-compatible text routes, native `/generate` with `input_ids` for tokens. */
export class SGLangBackend extends OpenAITextBackend implements InferenceBackend {
  readonly serverType = "sglang" as const;
  readonly tokenSupport = "exact" as const;

  constructor(deps: BackendDeps) {
    super(deps, "all");
  }

  async generateTokens(
    request: TokenGenerationRequest,
    options: CallOptions = {},
  ): Promise<TokensAndLogprobs> {
    const url = `${rootUrl(this.deps.config.base_url)}/generate`;
    const raw = await this.postTo(url, buildSGLangGenerateRequest(request), options);
    return parseSGLangGenerateResponse(raw, request.inputIds);
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    return probe(this.context(options), `${rootUrl(this.deps.config.base_url)}/health`);
  }
}

/**
 * `POST /generate` (SGLang `GenerateReqInput`): `input_ids`, every sampling value under SGLang's
 * names (`max_new_tokens`, `sampling_seed`), `return_logprob` for the output tokens only
 * (`logprob_start_len` defaults to -1).
 */
export function buildSGLangGenerateRequest(
  request: TokenGenerationRequest,
): Record<string, unknown> {
  return {
    input_ids: request.inputIds,
    sampling_params: sglangSamplingParams(resolveSampling(request)),
    return_logprob: true,
    return_text_in_logprobs: false,
  };
}

/**
 * One object per choice (a list when n > 1): the ids from `output_ids` (older versions send it
 * only with skip_tokenizer_init, so else from the logprob tuples), the logprobs from
 * `meta_info.output_token_logprobs = [[logprob, id, text|null], ...]`, whose ids must agree.
 */
export function parseSGLangGenerateResponse(
  raw: unknown,
  promptTokens: number[],
): TokensAndLogprobs {
  const items = Array.isArray(raw) ? raw : [raw];
  const result: TokensAndLogprobs = {
    promptTokens,
    outputTokens: [],
    outputLogprobs: [],
    finishReasons: [],
  };
  for (const entry of items) {
    const item = asRecord(entry, "sglang /generate item");
    const meta = asRecord(item.meta_info, "sglang meta_info");
    const tupleIds: number[] = [];
    const logprobs: number[] = [];
    const tuples = asArray(meta.output_token_logprobs, "meta_info.output_token_logprobs");
    tuples.forEach((tuple, i) => {
      const [logprob, id] = asArray(tuple, "output_token_logprobs entry");
      if (!Number.isInteger(id)) throw new InferenceProtocolError("sglang: bad token id");
      tupleIds.push(id as number);
      logprobs.push(sampledLogprob(logprob, `sglang output_token_logprobs[${i}]`));
    });
    let ids = tupleIds;
    if (item.output_ids !== undefined && item.output_ids !== null) {
      ids = tokenIdList(item.output_ids, "sglang output_ids");
      if (!sameIds(ids, tupleIds)) {
        throw new InferenceProtocolError("sglang: output_ids and output_token_logprobs disagree");
      }
    }
    result.outputTokens.push(ids);
    result.outputLogprobs.push(logprobs);
    result.finishReasons.push(flattenFinishReason(meta.finish_reason));
  }
  return result;
}
