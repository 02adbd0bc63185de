/**
 * Rollout invocations inside workerd load a tokenizer only when their code path needs one: a
 * token-in/token-out rollout (the backend returns the ids) loads none; an env that tokenizes
 * itself, or a ManagedServer chat (client-side template), loads it once per env instance.
 * The inference server is an SGLang `/generate` answered through a fetch spy; loads are counted
 * through rollOutItem's injectable loader.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import type { RolloutItemMessage } from "../../src/core/wire/queue-messages";
import { parseServerConfig } from "../../src/core/wire/server-config";
import { HfTokenizer, type TokenizerFiles } from "../../src/inference/tokenizers/index";
import type { Tokenizer } from "../../src/inference/types";
import { rollOutItem } from "../../src/worker/queue-handler";
import tokenizerJson from "../fixtures/tokenizers/tiny/tokenizer.json";
import tokenizerConfig from "../fixtures/tokenizers/tiny/tokenizer_config.json";
import { setupRun, uniqueRun } from "./helpers";
import { GROUP_SIZE, type TokenIdsItem, TokenIdsTestEnv } from "./test-envs";
import { testEnvCatalog } from "./test-worker";

const bindings = env as unknown as Bindings;
const SERVER = "http://sglang.lazy.test";
/** A stock vLLM that renders chats itself and returns the ids (return_token_ids). */
const VLLM = "http://vllm.lazy.test/v1";
const OUTPUT = [11, 12, 13];
const SERVER_PROMPT = [5, 6, 7, 8];

/** Loads the tiny fixture tokenizer and counts the loads. */
function countingLoader() {
  const names: string[] = [];
  return {
    names,
    load: async (name: string): Promise<Tokenizer> => {
      names.push(name);
      return new HfTokenizer(name, { tokenizerJson, tokenizerConfig } as TokenizerFiles);
    },
  };
}

let generateRequests: { input_ids: number[] }[] = [];
let chatRequests: Record<string, unknown>[] = [];

/** vLLM ≥ 0.10.2's chat answer with return_token_ids and logprobs. */
function vllmChatAnswer(body: Record<string, unknown>): Response {
  const n = typeof body.n === "number" ? body.n : 1;
  return Response.json({
    id: "chatcmpl-1",
    model: "tiny",
    prompt_token_ids: SERVER_PROMPT,
    choices: Array.from({ length: n }, (_, index) => ({
      index,
      message: { role: "assistant", content: "abc" },
      finish_reason: "length",
      token_ids: OUTPUT,
      logprobs: {
        content: OUTPUT.map((id) => ({
          token: `token_id:${id}`,
          logprob: -0.25,
          top_logprobs: [],
        })),
      },
    })),
  });
}

beforeEach(() => {
  generateRequests = [];
  chatRequests = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    if (request.url === `${VLLM}/chat/completions`) {
      const body = (await request.json()) as Record<string, unknown>;
      chatRequests.push(body);
      return vllmChatAnswer(body);
    }
    if (!request.url.startsWith(SERVER)) return realFetch(input, init);
    expect(new URL(request.url).pathname).toBe("/generate");
    const body = (await request.json()) as {
      input_ids: number[];
      sampling_params?: { n?: number };
    };
    generateRequests.push(body);
    const n = body.sampling_params?.n ?? 1;
    const choice = {
      text: "",
      meta_info: {
        output_token_logprobs: OUTPUT.map((id) => [-0.5, id, null]),
        finish_reason: { type: "length", length: OUTPUT.length },
      },
    };
    return Response.json(n === 1 ? choice : Array.from({ length: n }, () => choice));
  });
});

afterEach(() => {
  vi.restoreAllMocks();
});

async function invoke(
  run: string,
  envId: number,
  tokenizerName: string,
  item: TokenIdsItem,
  loader: ReturnType<typeof countingLoader>,
  server: { base_url: string; server_type: "sglang" | "vllm" } = {
    base_url: SERVER,
    server_type: "sglang",
  },
) {
  const msg: RolloutItemMessage = {
    itemId: `${run}-${generateRequests.length}-${JSON.stringify(item).length}`,
    run,
    feeder: `${run}-feeder`,
    envId,
    spec: {
      envName: TokenIdsTestEnv.envName,
      // A fresh spec per test: rollout envs are cached per isolate and spec.
      config: { group_size: GROUP_SIZE, tokenizer_name: tokenizerName, worker_timeout: -1 },
      inference: [parseServerConfig({ ...server, model_name: "tiny" })],
    },
    item,
    policyVersion: 0,
    issuedAt: Date.now(),
  };
  return rollOutItem(bindings, msg, testEnvCatalog, { loadTokenizer: loader.load });
}

describe("tokenizers in rollout invocations are lazy", () => {
  it("never loads one when the backend takes and returns token ids", async () => {
    const run = uniqueRun("lazy-ids");
    const { envIds } = await setupRun(run, 8, [GROUP_SIZE]);
    const loader = countingLoader();
    const name = `r2://tokenizers/${run}`;
    for (const ids of [
      [1, 2, 3],
      [4, 5],
    ]) {
      const result = await invoke(run, envIds[0]!, name, { ids }, loader);
      expect(result.kind).toBe("submitted");
    }
    expect(generateRequests.map((r) => r.input_ids)).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(loader.names).toEqual([]);
  });

  it("loads it once when the env tokenizes itself, and runs that item again", async () => {
    const run = uniqueRun("lazy-text");
    const { envIds } = await setupRun(run, 8, [GROUP_SIZE]);
    const loader = countingLoader();
    const name = `r2://tokenizers/${run}`;
    const expected = (await loader.load("probe")).encode("hello world");
    loader.names.length = 0;

    const first = await invoke(run, envIds[0]!, name, { text: "hello world" }, loader);
    expect(first.kind).toBe("submitted");
    const second = await invoke(run, envIds[0]!, name, { text: "hello world!" }, loader);
    expect(second.kind).toBe("submitted");
    expect(loader.names).toEqual([name]);
    // The first attempt stopped at the env's encode() before any inference call.
    expect(generateRequests[0]!.input_ids).toEqual(expected);
    expect(generateRequests).toHaveLength(2);
  });

  it("loads it when the env decodes after sampling, without sampling that item again", async () => {
    const run = uniqueRun("lazy-decode");
    const { envIds } = await setupRun(run, 8, [GROUP_SIZE]);
    const loader = countingLoader();
    const name = `r2://tokenizers/${run}`;
    const result = await invoke(run, envIds[0]!, name, { ids: [1, 2, 3], decode: true }, loader);
    expect(result.kind).toBe("submitted");
    expect(loader.names).toEqual([name]);
    // One sampling request: the second run of the item got the first run's answer.
    expect(generateRequests.map((r) => r.input_ids)).toEqual([[1, 2, 3]]);
    const again = await invoke(run, envIds[0]!, name, { ids: [4, 5], decode: true }, loader);
    expect(again.kind).toBe("submitted");
    expect(generateRequests).toHaveLength(2);
    expect(loader.names).toEqual([name]);
  });

  it("never loads one for ManagedServer chats on a vllm that returns the chat's ids", async () => {
    const run = uniqueRun("lazy-vllm-chat");
    const { envIds } = await setupRun(run, 8, [GROUP_SIZE]);
    const loader = countingLoader();
    const name = `r2://tokenizers/${run}`;
    const vllm = { base_url: VLLM, server_type: "vllm" as const };
    for (const chat of ["hi", "hello"]) {
      const result = await invoke(run, envIds[0]!, name, { chat }, loader, vllm);
      expect(result.kind).toBe("submitted");
    }
    expect(loader.names).toEqual([]);
    expect(generateRequests).toEqual([]);
    expect(chatRequests.map((r) => r.messages)).toEqual([
      [{ role: "user", content: "hi" }],
      [{ role: "user", content: "hello" }],
    ]);
    expect(chatRequests[0]).toMatchObject({
      return_token_ids: true,
      n: GROUP_SIZE,
      logprobs: true,
    });
  });

  it("loads it once for ManagedServer chats (the prompt is templated client-side)", async () => {
    const run = uniqueRun("lazy-chat");
    const { envIds } = await setupRun(run, 8, [GROUP_SIZE]);
    const loader = countingLoader();
    const name = `r2://tokenizers/${run}`;
    for (const chat of ["hi", "hello"]) {
      const result = await invoke(run, envIds[0]!, name, { chat }, loader);
      expect(result.kind).toBe("submitted");
    }
    expect(loader.names).toEqual([name]);
    const tokenizer = await loader.load("probe");
    const prompt = tokenizer.applyChatTemplate([{ role: "user", content: "hi" }], {
      addGenerationPrompt: true,
    });
    expect(generateRequests[0]!.input_ids).toEqual(
      tokenizer.encode(prompt, { addSpecialTokens: true }),
    );
  });
});
