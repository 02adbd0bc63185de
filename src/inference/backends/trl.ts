/**
 * TRL `trl vllm-serve` (huggingface/trl trl/scripts/vllm_serve.py). `POST /generate/` takes the
 * prompt as token ids (`prompts: [[ids]]`, TRL ≥ 1.0) and returns `prompt_ids`, `completion_ids`
 * and, with `logprobs: 0`, the sampled tokens' logprobs (TRL ≥ 0.29: `logprobs` +
 * `logprob_token_ids` per position, sorted by rank). Older TRL takes text prompts only: after its
 * 422 this backend sends the decoded prompt instead and checks the `prompt_ids` it gets back
 * (TRL ≥ 0.24); logprobs then come as TRL returns them (0.23–0.28: one float per token), or not
 * at all (before 0.23: `logprobsUnavailable`).
 */
import type { TokensAndLogprobs } from "../types";
import {
  asArray,
  asRecord,
  InferenceHttpError,
  InferenceMismatchError,
  InferenceProtocolError,
  probe,
  rootUrl,
} from "./http";
import { type ResolvedSampling, resolveSampling } from "./sampling";
import { TokenRouteBackend } from "./token-text";
import { sameIds, sampledLogprob, tokenIdList } from "./tokens";
import type { CallOptions, InferenceBackend, TokenGenerationRequest } from "./types";

export class TrlBackend extends TokenRouteBackend implements InferenceBackend {
  readonly serverType = "trl" as const;
  readonly tokenSupport = "exact" as const;
  /** Set after a TRL older than 1.0 refused token-id prompts. */
  private textPrompts = false;

  async generateTokens(
    request: TokenGenerationRequest,
    options: CallOptions = {},
  ): Promise<TokensAndLogprobs> {
    const sampling = resolveSampling(request);
    if (!this.textPrompts) {
      try {
        const raw = await this.post(buildTrlGenerateRequest([request.inputIds], sampling), options);
        return parseTrlGenerateResponse(raw, request.inputIds, sampling.maxTokens);
      } catch (error) {
        if (!refusedTokenPrompts(error)) throw error;
        this.textPrompts = true;
      }
    }
    const tokenizer = await this.deps.tokenizer();
    const prompt = tokenizer.decode(request.inputIds);
    const raw = await this.post(buildTrlGenerateRequest([prompt], sampling), options);
    return parseTrlGenerateResponse(raw, request.inputIds, sampling.maxTokens);
  }

  healthCheck(options: CallOptions = {}): Promise<boolean> {
    return probe(this.context(options), `${rootUrl(this.deps.config.base_url)}/health/`);
  }

  private post(body: Record<string, unknown>, options: CallOptions): Promise<unknown> {
    const url = `${rootUrl(this.deps.config.base_url)}/generate/`;
    return this.postTo(url, body, options);
  }
}

/** TRL before 1.0 answers a token-id prompt with 422 on `prompts` ("valid string"). */
function refusedTokenPrompts(error: unknown): boolean {
  return (
    error instanceof InferenceHttpError &&
    error.status === 422 &&
    /prompts/.test(error.serverMessage) &&
    /string/i.test(error.serverMessage)
  );
}

/**
 * `GenerateRequest`: the named sampling fields (TRL's defaults would be max_tokens 16),
 * `logprobs: 0` (only the sampled token's), and `generation_kwargs` (merged into vLLM's
 * `SamplingParams`, overriding the named fields) for the seed, stop strings and the rest.
 */
export function buildTrlGenerateRequest(
  prompts: string[] | number[][],
  s: ResolvedSampling,
): Record<string, unknown> {
  const generationKwargs: Record<string, unknown> = {
    ...s.extra,
    ...(s.seed !== undefined ? { seed: s.seed } : {}),
    ...(s.stop ? { stop: s.stop } : {}),
  };
  return {
    prompts,
    n: s.n,
    repetition_penalty: s.repetitionPenalty,
    temperature: s.temperature,
    top_p: s.topP,
    top_k: s.topK,
    min_p: s.minP,
    max_tokens: s.maxTokens,
    logprobs: 0,
    ...(Object.keys(generationKwargs).length > 0 ? { generation_kwargs: generationKwargs } : {}),
  };
}

/**
 * One prompt: `completion_ids` holds its n completions. `prompt_ids[0]` must be the prompt that
 * was meant. TRL has no finish reasons: a completion of max_tokens tokens is "length", a shorter
 * one "stop" (it ended on EOS or a stop string).
 */
export function parseTrlGenerateResponse(
  raw: unknown,
  promptTokens: number[],
  maxTokens: number,
): TokensAndLogprobs {
  const body = asRecord(raw, "trl /generate/");
  const completions = asArray(body.completion_ids, "trl completion_ids").map((ids, s) =>
    tokenIdList(ids, `trl completion_ids[${s}]`),
  );
  if (Array.isArray(body.prompt_ids)) {
    const returned = tokenIdList(body.prompt_ids[0], "trl prompt_ids[0]");
    if (!sameIds(returned, promptTokens)) {
      throw new InferenceMismatchError(
        "trl vllm-serve tokenized the prompt differently from the ids meant (a TRL before 1.0 takes text prompts only): upgrade to trl>=1.0, which takes token-id prompts",
      );
    }
  }
  const finishReasons = completions.map((ids) => (ids.length >= maxTokens ? "length" : "stop"));
  if (body.logprobs === undefined || body.logprobs === null) {
    return {
      promptTokens,
      outputTokens: completions,
      outputLogprobs: completions.map(() => []),
      finishReasons,
      logprobsUnavailable: true,
    };
  }
  const perSequence = asArray(body.logprobs, "trl logprobs");
  const tokenIds = Array.isArray(body.logprob_token_ids) ? body.logprob_token_ids : null;
  const outputLogprobs = completions.map((ids, s) => {
    const values = asArray(perSequence[s], `trl logprobs[${s}]`);
    if (values.length !== ids.length) {
      throw new InferenceProtocolError(
        `trl: ${ids.length} completion ids but ${values.length} logprobs in sequence ${s}`,
      );
    }
    return ids.map((id, t) => {
      const where = `trl logprobs[${s}][${t}]`;
      const entry = values[t];
      if (!Array.isArray(entry)) return sampledLogprob(entry, where); // TRL 0.23–0.28: a float
      // TRL ≥ 0.29: entries sorted by rank; the sampled id is found in logprob_token_ids.
      const ranked = tokenIds ? (tokenIds[s] as unknown[] | undefined)?.[t] : undefined;
      const k = Array.isArray(ranked) ? ranked.indexOf(id) : 0;
      if (k < 0) throw new InferenceProtocolError(`${where}: the sampled id ${id} is missing`);
      return sampledLogprob(entry[k], where);
    });
  });
  return { promptTokens, outputTokens: completions, outputLogprobs, finishReasons };
}
