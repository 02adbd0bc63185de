import {
  type APIServerConfigInput,
  parseServerConfig,
  tokenizerNameOf,
} from "../core/wire/server-config";
import type { FetchLike } from "./backends/http";
import { createBackend, InferenceMismatchError, isRetryableError } from "./backends/index";
import { mergeChoices } from "./backends/openai";
import { TOKEN_CALL_KEYS, tokenRequestFrom } from "./backends/sampling";
import type {
  ChatWithTokens,
  CompletionWithTokens,
  TokenGenerationRequest,
} from "./backends/types";
import { TrackingManagedServer } from "./managed-server";
import { type BackoffPolicy, backoffDelayMs, DEFAULT_BACKOFF, sleep, splitN } from "./retry";
import { recordingFetch } from "./sampling-record";
import { leastLoaded, ServerSlot, type Split } from "./server-slot";
import { getTokenizer as defaultGetTokenizer } from "./tokenizers/index";
import { LazyTokenizer } from "./tokenizers/lazy";
import type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  InferenceClient,
  ManagedServer,
  ManagedServerState,
  Tokenizer,
  TokensAndLogprobs,
} from "./types";

export interface ServerManagerOptions {
  fetch?: FetchLike;
  getTokenizer?: (name: string) => Promise<Tokenizer>;
  backoff?: Partial<BackoffPolicy>;
  /** Minimum time between health probes of one unhealthy server. */
  healthProbeIntervalMs?: number;
  random?: () => number;
  now?: () => number;
}

/**
 * Routes requests over several inference servers (docs/INFERENCE.md): least-loaded healthy
 * server, per-server adaptive concurrency caps, retries with backoff on 5xx/timeouts/network
 * errors, `n` split into chunks of max_n_completions. No background timers: an unhealthy
 * server is re-probed lazily, at most once per healthProbeIntervalMs, when a request is routed.
 */
export class ServerManager implements InferenceClient {
  readonly servers: ServerSlot[];
  private readonly fetchFn: FetchLike;
  private readonly loadTokenizer: (name: string) => Promise<Tokenizer>;
  private readonly backoff: BackoffPolicy;
  private readonly probeIntervalMs: number;
  private readonly random: () => number;
  private readonly now: () => number;

  constructor(configs: APIServerConfigInput[], options: ServerManagerOptions = {}) {
    if (configs.length === 0)
      throw new Error("ServerManager: at least one server config is required");
    // Answers are replayed, not sampled again, when a rollout runs again (sampling-record.ts).
    this.fetchFn = recordingFetch(options.fetch ?? ((input, init) => fetch(input, init)));
    this.loadTokenizer = options.getTokenizer ?? defaultGetTokenizer;
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.probeIntervalMs = options.healthProbeIntervalMs ?? 10_000;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.servers = configs.map((input, index) => {
      const config = parseServerConfig(input);
      const backend = createBackend({
        config,
        fetch: this.fetchFn,
        tokenizer: () => this.loadTokenizer(tokenizerNameOf(config)),
      });
      return new ServerSlot(index, config, backend);
    });
  }

  private get maxN(): number {
    return this.servers[0]?.config.max_n_completions ?? 8;
  }

  updateWeight(weight: number): void {
    for (const server of this.servers) {
      server.train.setWeight(weight);
      server.eval.setWeight(weight);
    }
  }

  async chatCompletion(
    params: ChatCompletionParams,
    caller?: AbortSignal,
  ): Promise<ChatCompletionResult> {
    const results = await this.inChunks(
      splitOf(params),
      params.n ?? 1,
      (server, n, signal) =>
        server.backend.chatCompletion({ ...params, n, split: undefined }, { signal }),
      { caller },
    );
    return mergeChoices(results);
  }

  async completion(params: CompletionParams): Promise<CompletionResult> {
    const results = await this.inChunks(splitOf(params), params.n ?? 1, (server, n, signal) =>
      server.backend.completion({ ...params, n, split: undefined }, { signal }),
    );
    return mergeChoices(results);
  }

  async tokensAndLogprobsCompletion(
    params: CompletionParams & { input_ids?: number[] },
  ): Promise<TokensAndLogprobs> {
    const candidates = this.servers.filter((s) => s.backend.tokenSupport !== "none");
    const first = candidates[0];
    if (!first) {
      throw new Error(
        "tokensAndLogprobsCompletion needs a token-exact server (server_type vllm, vllm-generate, atropos, sglang or trl); openai servers return text only",
      );
    }
    const inputIds =
      params.input_ids ??
      (await this.loadTokenizer(tokenizerNameOf(first.config))).encode(params.prompt, {
        addSpecialTokens: true,
      });
    // Further sampling parameters (top_k, min_p, …) go to the server under its own names.
    const request = tokenRequestFrom(inputIds, params, TOKEN_CALL_KEYS);
    return this.generateTokens(request, splitOf(params), null);
  }

  /**
   * A chat completion rendered by the server's own chat template, with the prompt ids, sampled
   * ids and logprobs it used (no local tokenizer involved). Only servers whose backend can
   * return them take it (server_type vllm, on vLLM ≥ 0.10.2); `n` is split like elsewhere.
   */
  async chatCompletionWithTokens(
    params: ChatCompletionParams,
    signal?: AbortSignal,
  ): Promise<ChatWithTokens> {
    if (!this.servers.some((s) => s.backend.chatCompletionWithTokens)) {
      throw new Error(
        "chatCompletionWithTokens needs a server_type vllm server (vLLM ≥ 0.10.2 returns the chat's token ids)",
      );
    }
    return this.chatWithTokensOn(params, null, signal);
  }

  /**
   * A text completion with the prompt ids the server used and the sampled ids and logprobs (no
   * local tokenizer). Only servers whose backend can return them (server_type vllm) are used.
   */
  async completionWithTokens(
    params: CompletionParams,
    signal?: AbortSignal,
  ): Promise<CompletionWithTokens> {
    const able = (server: ServerSlot) => server.backend.completionWithTokens !== undefined;
    if (!this.servers.some(able)) {
      throw new Error(
        "completionWithTokens needs a server_type vllm server (vLLM ≥ 0.10.2 returns the prompt's token ids)",
      );
    }
    return this.withServer(
      splitOf(params),
      null,
      (server, signal) => {
        const call = server.backend.completionWithTokens;
        if (!call) throw new Error(`server ${server.index} cannot return a completion's token ids`);
        return call.call(server.backend, { ...params, split: undefined }, { signal });
      },
      able,
      signal,
    );
  }

  private async chatWithTokensOn(
    params: ChatCompletionParams,
    preferred: ServerSlot | null,
    signal?: AbortSignal,
  ): Promise<ChatWithTokens> {
    const results = await this.inChunks(
      splitOf(params),
      params.n ?? 1,
      async (server, n, signal) => {
        const call = server.backend.chatCompletionWithTokens;
        if (!call) throw new Error(`server ${server.index} cannot return a chat's token ids`);
        try {
          return await call.call(server.backend, { ...params, n, split: undefined }, { signal });
        } catch (error) {
          // An older vLLM: no prompt_token_ids. Not asked this way again.
          if (error instanceof InferenceMismatchError) server.serverChatTokens = false;
          throw error;
        }
      },
      {
        preferred,
        // A ManagedServer (preferred set) skips servers known unable: it has the client path.
        eligible: (server) =>
          preferred
            ? server.serverChatTokens
            : server.backend.chatCompletionWithTokens !== undefined,
        caller: signal,
      },
    );
    const [first] = results;
    if (!first) throw new Error("no chat result");
    return {
      chat: mergeChoices(results.map((r) => r.chat)),
      tokens: {
        promptTokens: first.tokens.promptTokens,
        outputTokens: results.flatMap((r) => r.tokens.outputTokens),
        outputLogprobs: results.flatMap((r) => r.tokens.outputLogprobs),
        finishReasons: results.flatMap((r) => r.tokens.finishReasons),
      },
    };
  }

  /**
   * A ManagedServer bound to the least-loaded healthy server (it fails over to another one if
   * that server goes down). OpenAI-compatible servers give nodes with tokens_unavailable. Where
   * the server templates chats and returns their ids, chats need no tokenizer (see
   * TrackingManagedServer for when the client path is still taken).
   */
  async managedServer(
    options: {
      tokenizer?: Tokenizer;
      preserveThinkBlocks?: boolean;
      clientTemplate?: boolean;
      state?: ManagedServerState;
      signal?: AbortSignal;
    } = {},
  ): Promise<ManagedServer> {
    const server = await this.pick("train", null);
    // Loaded by the ManagedServer only when a call renders or tokenizes on the client (a
    // 128–152k vocabulary is most of a Worker's memory).
    const name = tokenizerNameOf(server.config);
    const tokenizer = options.tokenizer ?? new LazyTokenizer(name, () => this.loadTokenizer(name));
    const serverTemplates = server.serverChatTokens && options.clientTemplate !== true;
    return new TrackingManagedServer({
      tokenizer,
      modelName: server.config.model_name,
      tokenSupport: server.backend.tokenSupport,
      preserveThinkBlocks: options.preserveThinkBlocks,
      ...(options.state ? { state: options.state } : {}),
      generate: (request, split) => this.generateTokens(request, split, server, options.signal),
      chatCompletion: (params) => this.chatCompletion(params, options.signal),
      completion: (params) => this.completion(params),
      ...(serverTemplates
        ? { chatWithTokens: (params) => this.managedChatWithTokens(params, server) }
        : {}),
    });
  }

  /** null once the server shows it cannot return a chat's ids: callers template on the client. */
  private async managedChatWithTokens(
    params: ChatCompletionParams,
    server: ServerSlot,
  ): Promise<ChatWithTokens | null> {
    if (!server.serverChatTokens) return null;
    try {
      return await this.chatWithTokensOn(params, server);
    } catch (error) {
      // The bound server (or, after a failover, every capable one) turned out unable.
      if (error instanceof InferenceMismatchError || !server.serverChatTokens) return null;
      throw error;
    }
  }

  /** Snapshot for dashboards and tests. */
  stats(): {
    index: number;
    baseUrl: string;
    healthy: boolean;
    trainInUse: number;
    evalInUse: number;
    requests: number;
    failures: number;
  }[] {
    return this.servers.map((s) => ({
      index: s.index,
      baseUrl: s.config.base_url,
      healthy: s.healthy,
      trainInUse: s.train.inUse,
      evalInUse: s.eval.inUse,
      requests: s.requests,
      failures: s.failures,
    }));
  }

  private async generateTokens(
    request: TokenGenerationRequest,
    split: Split,
    preferred: ServerSlot | null,
    caller?: AbortSignal,
  ): Promise<TokensAndLogprobs> {
    const results = await this.inChunks(
      split,
      request.n,
      (server, n, signal) => server.backend.generateTokens({ ...request, n }, { signal }),
      { preferred, eligible: (server) => server.backend.tokenSupport !== "none", caller },
    );
    const [first] = results;
    if (!first) throw new Error("no generation result");
    return {
      promptTokens: first.promptTokens,
      outputTokens: results.flatMap((r) => r.outputTokens),
      outputLogprobs: results.flatMap((r) => r.outputLogprobs),
      finishReasons: results.flatMap((r) => r.finishReasons),
      ...(results.some((r) => r.logprobsUnavailable) ? { logprobsUnavailable: true } : {}),
    };
  }

  /**
   * Runs `call` on a routed server holding one of its slots; retries retryable failures. A
   * `caller` signal (the inference proxy's client went away) aborts the request and any retry.
   */
  /** `total` samples in chunks of at most `maxN`, each called on a server of `split`. */
  private inChunks<T>(
    split: Split,
    total: number,
    call: (server: ServerSlot, n: number, signal: AbortSignal) => Promise<T>,
    options: {
      preferred?: ServerSlot | null;
      eligible?: (server: ServerSlot) => boolean;
      caller?: AbortSignal;
    } = {},
  ): Promise<T[]> {
    return Promise.all(
      splitN(total, this.maxN).map((n) =>
        this.withServer(
          split,
          options.preferred ?? null,
          (server, signal) => call(server, n, signal),
          options.eligible,
          options.caller,
        ),
      ),
    );
  }

  private async withServer<T>(
    split: Split,
    preferred: ServerSlot | null,
    call: (server: ServerSlot, signal: AbortSignal) => Promise<T>,
    eligible: (server: ServerSlot) => boolean = () => true,
    caller?: AbortSignal,
  ): Promise<T> {
    let lastError: unknown;
    for (let attempt = 1; attempt <= this.backoff.maxAttempts; attempt++) {
      caller?.throwIfAborted();
      const server =
        (preferred?.healthy ? preferred : this.pickNow(split, eligible)) ??
        (await this.pick(split, eligible));
      const semaphore = split === "eval" ? server.eval : server.train;
      await semaphore.acquire();
      server.requests++;
      try {
        const timeout = AbortSignal.timeout(server.config.timeout * 1000);
        return await call(server, caller ? AbortSignal.any([timeout, caller]) : timeout);
      } catch (error) {
        lastError = error;
        if (caller?.aborted) throw caller.reason;
        server.failures++;
        if (!isRetryableError(error)) throw error;
        this.markUnhealthy(server);
      } finally {
        semaphore.release();
      }
      if (attempt < this.backoff.maxAttempts) {
        await sleep(backoffDelayMs(this.backoff, attempt, this.random));
      }
    }
    throw lastError;
  }

  private markUnhealthy(server: ServerSlot): void {
    if (!server.config.health_check) return; // nothing would ever restore it
    server.healthy = false;
    server.lastProbeAt = this.now();
  }

  /**
   * Least-loaded healthy eligible server; probes due unhealthy ones in the background. Only
   * when none is healthy does it wait for the probes, then it falls back to any candidate.
   * Synchronous in the common case so the caller takes a slot before anyone else routes.
   */
  private pickNow(
    split: Split,
    eligible: ((server: ServerSlot) => boolean) | null,
  ): ServerSlot | null {
    const candidates = eligible ? this.servers.filter(eligible) : this.servers;
    if (candidates.length === 0) throw new Error("no inference server can serve this request");
    for (const server of candidates) if (!server.healthy) void this.probeIfDue(server);
    const healthy = candidates.filter((s) => s.healthy);
    return healthy.length > 0 ? leastLoaded(healthy, split) : null;
  }

  private async pick(
    split: Split,
    eligible: ((server: ServerSlot) => boolean) | null,
  ): Promise<ServerSlot> {
    const now = this.pickNow(split, eligible);
    if (now) return now;
    const candidates = eligible ? this.servers.filter(eligible) : this.servers;
    await Promise.all(candidates.map((s) => s.probing ?? Promise.resolve()));
    // Still none healthy: try anyway (the request itself is the probe) rather than wait forever.
    return this.pickNow(split, eligible) ?? leastLoaded(candidates, split);
  }

  private probeIfDue(server: ServerSlot): Promise<void> {
    if (server.probing) return server.probing;
    if (this.now() - server.lastProbeAt < this.probeIntervalMs) return Promise.resolve();
    server.lastProbeAt = this.now();
    server.probing = server.backend
      .healthCheck({ signal: AbortSignal.timeout(Math.min(server.config.timeout, 10) * 1000) })
      .catch(() => false)
      .then((ok) => {
        server.healthy = ok;
        server.probing = null;
      });
    return server.probing;
  }
}

function splitOf(params: { split?: "train" | "eval" }): Split {
  return params.split === "eval" ? "eval" : "train";
}
