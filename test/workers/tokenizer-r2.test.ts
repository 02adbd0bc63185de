/**
 * getTokenizer inside workerd: any tokenizer.json + tokenizer_config.json from the R2 binding
 * (exact ids and chat template against the reference fixtures); bundled families from
 * `tokenizers/<family>/` in R2, as the dev server and `npm run deploy` upload them
 * (scripts/tokenizers-r2.mjs) or as plain files; a clear error when a family is not there.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { rolloutEnv } from "../../src/env-sdk/worker-env";
import { getTokenizer } from "../../src/inference/tokenizers/index";
import { loadTokenizer } from "../../src/inference/tokenizers/lazy";
import qwen3Golden from "../fixtures/tokenizers/qwen3.json";
import tokenizerJson from "../fixtures/tokenizers/tiny/tokenizer.json";
import tokenizerConfig from "../fixtures/tokenizers/tiny/tokenizer_config.json";
import golden from "../fixtures/tokenizers/tiny.json";
import { uniqueRun } from "./helpers";
import { testEnvs } from "./test-envs";

const bucket = (env as unknown as Bindings).PAYLOADS;

describe("tokenizers in a Worker", () => {
  it("loads tokenizer files from R2 and matches the reference ids and template", async () => {
    const prefix = `tokenizers/${uniqueRun("tok")}`;
    await bucket.put(`${prefix}/tokenizer.json`, JSON.stringify(tokenizerJson));
    await bucket.put(`${prefix}/tokenizer_config.json`, JSON.stringify(tokenizerConfig));

    const tokenizer = await getTokenizer(`r2://${prefix}`, { bucket });
    for (const { text, ids } of golden.texts) {
      expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual(ids);
      expect(tokenizer.decode(ids)).toBe(text);
    }
    const chat = golden.chats[0]!;
    const text = tokenizer.applyChatTemplate(chat.messages, { addGenerationPrompt: true });
    expect(text).toBe(chat.text);
    expect(tokenizer.encode(text)).toEqual(chat.ids);
    // Cached per source: a second call reads nothing from R2.
    expect(await getTokenizer(`r2://${prefix}/`, { bucket })).toBe(tokenizer);
  });

  it("takes a family from tokenizers/<family>/ in R2 when it is there", async () => {
    await bucket.put("tokenizers/mistral_nemo/tokenizer.json", JSON.stringify(tokenizerJson));
    await bucket.put(
      "tokenizers/mistral_nemo/tokenizer_config.json",
      JSON.stringify(tokenizerConfig),
    );
    const tokenizer = await getTokenizer("mistral-nemo", { bucket });
    expect(tokenizer.encode(golden.texts[0]!.text, { addSpecialTokens: false })).toEqual(
      golden.texts[0]!.ids,
    );
  });

  it("gives a rollout env the tokenizer its tokenizer_name names in R2", async () => {
    const prefix = `tokenizers/${uniqueRun("env-tok")}`;
    await bucket.put(`${prefix}/tokenizer.json`, JSON.stringify(tokenizerJson));
    await bucket.put(`${prefix}/tokenizer_config.json`, JSON.stringify(tokenizerConfig));
    const env = await rolloutEnv(
      {
        envName: testEnvs[2]!.name,
        config: { group_size: 2, tokenizer_name: `r2://${prefix}` },
        inference: [{ base_url: "http://127.0.0.1:9/v1", model_name: "m" }] as never,
      },
      testEnvs[2]!,
      bucket,
    );
    // Loaded on demand (tokenizers/lazy.ts), from the R2 prefix the env's config names.
    expect(() => env.tokenizer.encode("x")).toThrow("is not loaded yet");
    const tokenizer = await loadTokenizer(env.tokenizer);
    expect(tokenizer.encode(golden.texts[1]!.text, { addSpecialTokens: false })).toEqual(
      golden.texts[1]!.ids,
    );
    expect(env.tokenizer.encode(golden.texts[1]!.text, { addSpecialTokens: false })).toEqual(
      golden.texts[1]!.ids,
    );
  });

  it("loads a bundled family uploaded as dev and deploy do, exactly like the reference", async () => {
    const response = await env.TEST_TOKENIZER_OBJECTS.fetch("http://seed/qwen3");
    const objects = (await response.json()) as Record<string, string>;
    expect(Object.keys(objects).sort()).toEqual([
      "tokenizers/qwen3/bundled.json",
      "tokenizers/qwen3/tokenizer.json.br",
      "tokenizers/qwen3/tokenizer_config.json.br",
    ]);
    for (const [key, base64] of Object.entries(objects)) {
      await bucket.put(
        key,
        Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)),
      );
    }
    const tokenizer = await getTokenizer("Qwen/Qwen3-8B", { bucket });
    for (const { text, ids } of qwen3Golden.texts.slice(0, 80)) {
      expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual(ids);
    }
    const chat = qwen3Golden.chats.find((c) => "tools" in c)!;
    expect(
      tokenizer.applyChatTemplate(chat.messages as never, {
        addGenerationPrompt: true,
        tools: (chat as { tools?: never }).tools,
      }),
    ).toBe(chat.text);
  });

  it("refuses a bundled file in R2 that does not match its recorded sha256", async () => {
    const response = await env.TEST_TOKENIZER_OBJECTS.fetch("http://seed/llama3_2");
    const objects = (await response.json()) as Record<string, string>;
    for (const [key, base64] of Object.entries(objects)) {
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      // llama3_2's config stands in for its tokenizer.json: valid brotli, wrong content.
      const body = key.endsWith("/tokenizer.json.br")
        ? Uint8Array.from(atob(objects["tokenizers/llama3_2/tokenizer_config.json.br"]!), (c) =>
            c.charCodeAt(0),
          )
        : bytes;
      await bucket.put(key, body);
    }
    await expect(getTokenizer("llama3_2", { bucket })).rejects.toThrow(
      "tokenizers/llama3_2/tokenizer.json.br in R2 does not match its sha256 in bundled.json",
    );
  });

  it("says what is missing", async () => {
    await expect(getTokenizer("r2://tokenizers/none", { bucket })).rejects.toThrow(
      "R2 object tokenizers/none/tokenizer.json not found",
    );
    const missing = getTokenizer("gemma3", { bucket });
    await expect(missing).rejects.toThrow("tokenizer gemma3: not in R2 at tokenizers/gemma3/");
    await expect(missing).rejects.toThrow("npm run deploy -- --tokenizers-only");
  });
});
