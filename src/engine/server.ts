/**
 * `atropos-edge engine`: a GGUF model on llama.cpp behind the wire formats the backends speak.
 * The generation routes are the simulator's (src/sim/protocols.ts: vLLM's OpenAI routes with
 * `return_token_ids` and logprobs, `/inference/v1/generate`, Atropos' and SGLang's `/generate`,
 * TRL's `/generate/`), answered by the model; plus vLLM's `/tokenize` and `/detokenize`, and
 * SGLang's `/update_weights_from_disk` and `/flush_cache` to swap in trained weights.
 */
import { statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorMessage } from "../core/errors";
import type { ChatMessage } from "../core/wire/group-types";
import type { ToolDefinition } from "../inference/types";
import { errorBody, listenHttp, readBody, send, sendText } from "../sim/http";
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
} from "../sim/protocols";
import { EngineModel, type EngineModelOptions } from "./engine-model";
import type { Llama } from "./llama-api";

export interface EngineServerOptions extends EngineModelOptions {
  model: string;
  host?: string;
  port?: number;
  /** The name `/v1/models` lists and answers carry; default the file's name. */
  modelName?: string;
  /** max_tokens when a request names none (vLLM completions: 16). */
  maxTokensDefault?: number;
}

export interface EngineServer {
  url: string;
  port: number;
  model: EngineModel;
  stats(): EngineStats;
  close(): Promise<void>;
}

export interface EngineStats {
  requests: number;
  choices: number;
  completionTokens: number;
  weightVersion: number;
}

type Handler = (ctx: ProtocolContext, body: Body) => Promise<Body | Body[]>;

const GENERATION_ROUTES: Record<string, Handler> = {
  "/v1/chat/completions": chatCompletions,
  "/v1/completions": completions,
  "/inference/v1/generate": vllmTokensGenerate,
  "/generate/": trlGenerate,
  "/generate": (ctx, body) =>
    "prompt" in body ? vllmGenerate(ctx, body) : sglangGenerate(ctx, body),
};

export async function startEngineServer(
  llama: Llama,
  options: EngineServerOptions,
): Promise<EngineServer> {
  const model = await EngineModel.load(llama, options.model, options);
  const name = options.modelName ?? model.tokenizer.name;
  const stats: EngineStats = { requests: 0, choices: 0, completionTokens: 0, weightVersion: 0 };
  const protocol: ProtocolContext = {
    get tokenizer() {
      return model.tokenizer;
    },
    model: name,
    maxTokensDefault: options.maxTokensDefault ?? 16,
    async generate(promptText, sampling) {
      const choices = await model.generate(promptText, sampling);
      stats.choices += choices.length;
      stats.completionTokens += choices.reduce((sum, c) => sum + c.tokens.length, 0);
      return choices;
    },
  };

  const health = () => ({
    status: "ok",
    engine: "llama.cpp (node-llama-cpp)",
    model: name,
    model_path: model.path,
    vocab_size: model.tokenizer.vocabSize,
    max_model_len: model.contextSize,
    weight_version: String(model.version),
  });

  async function weights(path: string, raw: string): Promise<{ status: number; body: Body }> {
    if (path === "/flush_cache") {
      await model.flushCache();
      return { status: 200, body: { success: true, message: "Cache flushed." } };
    }
    const request = parseObject(raw || "{}");
    const file = request.model_path;
    if (typeof file !== "string" || !file) {
      return {
        status: 400,
        body: { success: false, message: "model_path (a .gguf file) is required" },
      };
    }
    const version =
      request.weight_version === undefined ? undefined : Number(request.weight_version);
    if (version !== undefined && !Number.isInteger(version)) {
      return {
        status: 400,
        body: { success: false, message: "weight_version must be an integer" },
      };
    }
    if (!isFile(file)) {
      return {
        status: 400,
        body: { success: false, message: `${file}: no such file (a .gguf; see engine convert)` },
      };
    }
    try {
      const loaded = await model.reload(file, version);
      stats.weightVersion = loaded;
      return {
        status: 200,
        body: {
          success: true,
          message: `loaded ${file}`,
          num_paused_requests: 0,
          weight_version: String(loaded),
        },
      };
    } catch (error) {
      const message = errorMessage(error);
      return { status: 400, body: { success: false, message: `${file}: ${message}` } };
    }
  }

  /** vLLM's POST /tokenize: `{prompt}` or `{messages}` → `{count, max_model_len, tokens}`. */
  function tokenize(body: Body): Body {
    const tokenizer = model.tokenizer;
    let tokens: number[];
    if (Array.isArray(body.messages)) {
      const text = tokenizer.applyChatTemplate(body.messages as ChatMessage[], {
        addGenerationPrompt: body.add_generation_prompt !== false,
        tools: Array.isArray(body.tools) ? (body.tools as ToolDefinition[]) : undefined,
      });
      tokens = tokenizer.encode(text, { addSpecialTokens: body.add_special_tokens === true });
    } else if (typeof body.prompt === "string") {
      tokens = tokenizer.encode(body.prompt, {
        addSpecialTokens: body.add_special_tokens !== false,
      });
    } else {
      throw new BadRequest("prompt (a string) or messages (a list) is required");
    }
    return { count: tokens.length, max_model_len: model.contextSize, tokens };
  }

  function detokenize(body: Body): Body {
    const ids = body.tokens;
    if (
      !Array.isArray(ids) ||
      !ids.every((id) => Number.isInteger(id) && id >= 0 && id < model.tokenizer.vocabSize)
    )
      throw new BadRequest(`tokens must be a list of token ids below ${model.tokenizer.vocabSize}`);
    return { prompt: model.tokenizer.decode(ids as number[]) };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    stats.requests++;
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method === "GET" && (path === "/health" || path === "/health/"))
      return send(res, 200, health());
    if (req.method === "GET" && (path === "/get_weight_version" || path === "/get_model_info"))
      return send(res, 200, { model_path: model.path, weight_version: String(model.version) });
    if (req.method === "GET" && path === "/v1/models") {
      return send(res, 200, {
        object: "list",
        data: [
          {
            id: name,
            object: "model",
            created: 0,
            owned_by: "atropos-edge-engine",
            max_model_len: model.contextSize,
          },
        ],
      });
    }
    if (
      (req.method === "POST" && path === "/update_weights_from_disk") ||
      ((req.method === "POST" || req.method === "GET") && path === "/flush_cache")
    ) {
      const answer = await weights(path, await readBody(req));
      return path === "/flush_cache" && answer.status === 200
        ? sendText(res, "Cache flushed.")
        : send(res, answer.status, answer.body);
    }
    const handler: ((body: Body) => Promise<Body | Body[]> | Body) | undefined =
      req.method !== "POST"
        ? undefined
        : path === "/tokenize"
          ? tokenize
          : path === "/detokenize"
            ? detokenize
            : GENERATION_ROUTES[path]
              ? (body) => (GENERATION_ROUTES[path] as Handler)(protocol, body)
              : undefined;
    // FastAPI's answer for a route it does not have (as vLLM and SGLang give it).
    if (!handler) return send(res, 404, { detail: "Not Found" });
    const raw = await readBody(req);
    try {
      const body = parseObject(raw);
      const version = model.version;
      send(res, 200, await handler(body), { "x-weight-version": String(version) });
    } catch (error) {
      if (
        error instanceof BadRequest ||
        error instanceof RangeError ||
        error instanceof SyntaxError
      )
        return send(res, 400, errorBody(error.message, "invalid_request_error", 400));
      if (error instanceof Error && /chat template/.test(error.message))
        return send(res, 400, errorBody(error.message, "invalid_request_error", 400));
      throw error;
    }
  }

  const listener = await listenHttp(handle, { host: options.host, port: options.port });
  return {
    url: listener.url,
    port: listener.port,
    model,
    stats: () => ({ ...stats, weightVersion: model.version }),
    close: async () => {
      await listener.close();
      await model.close();
    },
  };
}

function parseObject(raw: string): Body {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new BadRequest("invalid JSON");
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new BadRequest("body must be a JSON object");
  return parsed as Body;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
