/**
 * Atropos' custom vLLM server (NousResearch/atropos example_trainer/vllm_api_server.py, port 9001
 * by default). It has `POST /generate` and `GET /health` but no OpenAI routes, so text calls go
 * through `/generate` too (chat template and decoding done locally).
 */
import type { TokensAndLogprobs } from "../types";
import {
  asArray,
  asNumber,
  asRecord,
  flattenFinishReason,
  InferenceProtocolError,
  parseJsonText,
  postText,
  probe,
  rootUrl,
} from "./http";
import { resolveSampling, vllmSamplingFields } from "./sampling";
import { TokenRouteBackend } from "./token-text";
import type { CallOptions, InferenceBackend, TokenGenerationRequest } from "./types";
import { scanVllmGenerateBody } from "./vllm-generate-scan";

export class AtroposBackend extends TokenRouteBackend implements InferenceBackend {
  readonly serverType = "atropos" as const;
  readonly tokenSupport = "exact" as const;

  async generateTokens(
    request: TokenGenerationRequest,
    options: CallOptions = {},
  ): Promise<TokensAndLogprobs> {
    const url = `${rootUrl(this.deps.config.base_url)}/generate`;
    const text = await postText(
      this.context(options, url),
      url,
      buildAtroposGenerateRequest(request),
    );
    return parseAtroposGenerateText(text, request.inputIds, url);
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    return probe(this.context(options), `${rootUrl(this.deps.config.base_url)}/health`);
  }
}

/**
 * `{"prompt": {"prompt_token_ids": [...]}, "logprobs": 0, ...SamplingParams}`: the server pops
 * `prompt` and passes every other key to vLLM's `SamplingParams(**rest)`.
 */
export function buildAtroposGenerateRequest(
  request: TokenGenerationRequest,
): Record<string, unknown> {
  return {
    prompt: { prompt_token_ids: request.inputIds },
    ...vllmSamplingFields(resolveSampling(request)),
    logprobs: 0,
  };
}

/**
 * The `/generate` answer as text: the single-pass scanner when the body has the usual shape,
 * else JSON.parse + parseAtroposGenerateResponse (same result, same errors).
 */
export function parseAtroposGenerateText(
  text: string,
  promptTokens: number[],
  url: string,
): TokensAndLogprobs {
  const scanned = scanVllmGenerateBody(text);
  if (!scanned) return parseAtroposGenerateResponse(parseJsonText(text, url), promptTokens);
  const finishReasons = Array.isArray(scanned.finishReasons) ? scanned.finishReasons : [];
  return {
    promptTokens,
    outputTokens: scanned.outputTokens,
    outputLogprobs: scanned.outputLogprobs,
    finishReasons: scanned.outputTokens.map((_, i) => flattenFinishReason(finishReasons[i])),
  };
}

/**
 * `logprobs[choice][position] = [{"<id>": logprob}]` (with `logprobs: 0` the one key is the
 * sampled id), `finish_reasons[choice]`.
 */
export function parseAtroposGenerateResponse(
  raw: unknown,
  promptTokens: number[],
): TokensAndLogprobs {
  const body = asRecord(raw, "atropos /generate");
  const perChoice = asArray(body.logprobs, "atropos /generate logprobs");
  const finishReasons = Array.isArray(body.finish_reasons) ? body.finish_reasons : [];
  const outputTokens: number[][] = [];
  const outputLogprobs: number[][] = [];
  for (const choice of perChoice) {
    const ids: number[] = [];
    const logprobs: number[] = [];
    for (const position of asArray(choice, "atropos /generate logprobs[choice]")) {
      const entry = Array.isArray(position) ? position[0] : position;
      const [pair] = Object.entries(asRecord(entry, "atropos /generate logprob entry"));
      if (!pair) throw new InferenceProtocolError("atropos /generate: empty logprob entry");
      const id = Number(pair[0]);
      if (!Number.isInteger(id))
        throw new InferenceProtocolError(`atropos /generate: bad token id ${pair[0]}`);
      ids.push(id);
      logprobs.push(asNumber(pair[1], "atropos /generate logprob"));
    }
    outputTokens.push(ids);
    outputLogprobs.push(logprobs);
  }
  return {
    promptTokens,
    outputTokens,
    outputLogprobs,
    finishReasons: outputTokens.map((_, i) => flattenFinishReason(finishReasons[i])),
  };
}
