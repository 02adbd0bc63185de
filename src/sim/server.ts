/**
 * atropos-edge inference simulator — a TEST DOUBLE, not an LLM. Speaks the OpenAI, stock vLLM
 * (OpenAI routes with token ids, `/inference/v1/generate`), Atropos `/generate`, SGLang and TRL
 * wire formats over real HTTP with a real tokenizer, deterministic seeded outputs, latency and
 * fault injection. Node-only. Answers come from a trainable toy policy (src/sim/policy.ts) whose
 * weights a trainer replaces through SGLang's `POST /update_weights_from_disk` + `/flush_cache`.
 */
import { readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { seededRng } from "../core/codecs/rng";
import { errorMessage } from "../core/errors";
import { getTokenizer } from "../inference/tokenizers/index";
import { type Fault, type FaultRates, faultFor } from "./faults";
import { type GeneratedChoice, generateChoice } from "./generator";
import { errorBody, listenHttp, readBody, send, sendText, sendTruncated } from "./http";
import { parseWeightsFile, ToyPolicy } from "./policy";
import {
  BadRequest,
  type Body,
  chatCompletions,
  completions,
  type ProtocolContext,
  sglangGenerate,
  trlGenerate,
  vllmGenerate,
  vllmTokensGenerate,
} from "./protocols";

export interface SimulatorOptions {
  host?: string;
  port?: number;
  tokenizer?: string;
  seed?: number;
  latencyMs?: number;
  latencyJitterMs?: number;
  correctProbability?: number;
  maxTokensDefault?: number;
  faults?: FaultRates;
  model?: string;
}

export interface SimulatorStats {
  requests: number;
  generationRequests: number;
  byRoute: Record<string, number>;
  faults: Record<Exclude<Fault, null>, number>;
  choices: number;
  completionTokens: number;
  inFlight: number;
  /** The toy policy's weight version (0 until the first weight update). */
  weightVersion: number;
}

export interface Simulator {
  url: string;
  port: number;
  /** In-process access for the CLI: env registrations in, sampled-candidate lookups out. */
  policy: ToyPolicy;
  close(): Promise<void>;
  stats(): SimulatorStats;
}

type Handler = (ctx: ProtocolContext, body: Body) => Promise<Body | Body[]>;

/** Generation routes: the only ones subject to latency and faults. */
const GENERATION_ROUTES: Record<string, Handler> = {
  "/v1/chat/completions": chatCompletions,
  "/v1/completions": completions,
  "/inference/v1/generate": vllmTokensGenerate,
  "/generate/": trlGenerate,
  // Atropos' vLLM server and SGLang share the path: told apart by the body.
  "/generate": (ctx, body) =>
    "prompt" in body ? vllmGenerate(ctx, body) : sglangGenerate(ctx, body),
};

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? "127.0.0.1";
  const seed = options.seed ?? 0;
  const model = options.model ?? "sim-policy";
  const latencyMs = options.latencyMs ?? 0;
  const jitterMs = options.latencyJitterMs ?? 0;
  const faults = options.faults ?? {};
  const tokenizerName = options.tokenizer ?? "qwen3";
  const tokenizer = await getTokenizer(tokenizerName);

  const stats: SimulatorStats = {
    requests: 0,
    generationRequests: 0,
    byRoute: {},
    faults: { error: 0, timeout: 0, truncate: 0, slow: 0 },
    choices: 0,
    completionTokens: 0,
    inFlight: 0,
    weightVersion: 0,
  };
  const policy = new ToyPolicy();
  const settings = { seed, correctProbability: options.correctProbability ?? 0.5 };
  // Like a real sampler, unseeded requests differ from each other (deterministically, in arrival
  // order); an explicit `seed` reproduces its output exactly.
  let unseededRequests = 0;
  const protocol: ProtocolContext = {
    tokenizer,
    model,
    maxTokensDefault: options.maxTokensDefault ?? 256,
    generate(promptText, sampling): GeneratedChoice[] {
      const requestSeed = sampling.seed ?? 0x40000000 + unseededRequests++;
      const choices = Array.from({ length: sampling.n }, (_, choiceIndex) =>
        generateChoice(
          tokenizer,
          settings,
          {
            promptText,
            choiceIndex,
            requestSeed,
            maxTokens: sampling.maxTokens,
            stop: sampling.stop,
            temperature: sampling.temperature,
            promptIds: sampling.promptIds,
            toolFormat: sampling.toolFormat,
          },
          policy,
        ),
      );
      stats.choices += choices.length;
      stats.completionTokens += choices.reduce((sum, c) => sum + c.tokens.length, 0);
      return choices;
    },
  };
  const timers = new Set<NodeJS.Timeout>();
  let closing = false;

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0) return resolve();
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const health = () => ({
    status: "ok",
    test_double: true,
    note: "atropos-edge inference simulator: a TEST DOUBLE (toy policy + scripted answers), not an LLM",
    model,
    tokenizer: tokenizer.name,
    weight_version: String(policy.version),
  });

  /** SGLang's weight routes: `{success, message}` with 200, or 400 and nothing changed. */
  async function weightRoute(path: string, raw: string): Promise<{ status: number; body: Body }> {
    if (path === "/flush_cache") {
      policy.flushCache();
      return { status: 200, body: { success: true, message: "Cache flushed." } };
    }
    let request: Body;
    try {
      request = JSON.parse(raw || "{}") as Body;
    } catch {
      return { status: 400, body: { success: false, message: "body must be JSON" } };
    }
    if (typeof request.model_path !== "string" || !request.model_path) {
      return { status: 400, body: { success: false, message: "model_path (a file) is required" } };
    }
    const version =
      request.weight_version === undefined ? undefined : Number(request.weight_version);
    if (version !== undefined && !Number.isInteger(version)) {
      return {
        status: 400,
        body: { success: false, message: "weight_version must be an integer" },
      };
    }
    try {
      const weights = parseWeightsFile(await readFile(request.model_path, "utf8"));
      const loaded = policy.loadWeights(weights, version, request.flush_cache !== false);
      stats.weightVersion = loaded;
      return {
        status: 200,
        body: {
          success: true,
          message: `loaded ${Object.keys(weights).length} weights from ${request.model_path}`,
          num_paused_requests: 0,
          weight_version: String(loaded),
        },
      };
    } catch (error) {
      const message = errorMessage(error);
      return {
        status: 400,
        body: { success: false, message: `${request.model_path}: ${message}` },
      };
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    stats.requests++;
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    stats.byRoute[`${req.method} ${path}`] = (stats.byRoute[`${req.method} ${path}`] ?? 0) + 1;
    if (req.method === "GET" && (path === "/health" || path === "/health/"))
      return send(res, 200, health());
    if (req.method === "GET" && (path === "/get_weight_version" || path === "/get_model_info"))
      return send(res, 200, { model_path: model, weight_version: String(policy.version) });
    if (
      (req.method === "POST" && path === "/update_weights_from_disk") ||
      ((req.method === "POST" || req.method === "GET") && path === "/flush_cache")
    ) {
      const answer = await weightRoute(path, await readBody(req));
      return path === "/flush_cache" && answer.status === 200
        ? sendText(res, "Cache flushed.")
        : send(res, answer.status, answer.body);
    }
    if (req.method === "GET" && path === "/v1/models") {
      return send(res, 200, {
        object: "list",
        data: [{ id: model, object: "model", created: 0, owned_by: "atropos-edge-simulator" }],
      });
    }
    const handler = req.method === "POST" ? GENERATION_ROUTES[path] : undefined;
    // FastAPI's answer for a route it does not have (vLLM, SGLang, TRL, Atropos' server).
    if (!handler) return send(res, 404, { detail: "Not Found" });

    const requestNumber = stats.generationRequests++;
    const fault = faultFor(requestNumber, faults);
    if (fault) stats.faults[fault]++;
    const started = performance.now();
    const raw = await readBody(req);
    // The answer is computed first and sent when the configured latency has passed since the
    // request arrived: latency is the total time, as a client sees from a real server.
    const answer = await answerFor(handler, raw);
    const jitter = jitterMs > 0 ? seededRng(seed, "latency", requestNumber)() * jitterMs : 0;
    const delay = latencyMs + jitter + (fault === "slow" ? (faults.slowMs ?? 500) : 0);
    await wait(delay - (performance.now() - started));
    if (closing) return;
    if (fault === "timeout") return; // hold the connection until the client gives up
    if (fault === "error")
      return send(res, 500, errorBody("simulated server fault", "server_error", 500));
    if (answer.status === 200 && fault === "truncate") return sendTruncated(res, answer.body);
    send(res, answer.status, answer.body, { "x-weight-version": String(answer.version) });
  }

  async function answerFor(
    handler: Handler,
    raw: string,
  ): Promise<{ status: number; body: Body | Body[]; version: number }> {
    const version = policy.version;
    let body: Body;
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
        throw new BadRequest("body must be a JSON object");
      body = parsed as Body;
    } catch (error) {
      const message = error instanceof BadRequest ? error.message : "invalid JSON";
      return { status: 400, body: errorBody(message, "invalid_request_error", 400), version };
    }
    try {
      return { status: 200, body: await handler(protocol, body), version };
    } catch (error) {
      if (error instanceof BadRequest)
        return {
          status: 400,
          body: errorBody(error.message, "invalid_request_error", 400),
          version,
        };
      throw error;
    }
  }

  const listener = await listenHttp(
    (req, res) => {
      stats.inFlight++;
      res.on("close", () => stats.inFlight--);
      return handle(req, res);
    },
    { host, port: options.port },
  );

  return {
    url: listener.url,
    port: listener.port,
    policy,
    stats: () => structuredClone(stats),
    close: () => {
      closing = true;
      for (const timer of timers) clearTimeout(timer);
      return listener.close();
    },
  };
}
