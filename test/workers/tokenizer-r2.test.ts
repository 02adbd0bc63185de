/**
 * getTokenizer inside workerd: any tokenizer.json + tokenizer_config.json from the R2 binding
 * (exact ids and chat template against the reference fixtures); bundled families from
 * `tokenizers/<family>/` in R2, else (qwen3, llama3) from their package's JSON files.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { getTokenizer } from "../../src/env-workers/tokenizers/index";
import { rolloutEnv } from "../../src/env-workers/worker-env";
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
    expect(env.tokenizer.encode(golden.texts[1]!.text, { addSpecialTokens: false })).toEqual(
      golden.texts[1]!.ids,
    );
  });

  it("loads qwen3 without R2, exactly like the reference", async () => {
    const tokenizer = await getTokenizer("Qwen/Qwen3-8B");
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

  it("says what is missing", async () => {
    await expect(getTokenizer("r2://tokenizers/none", { bucket })).rejects.toThrow(
      "R2 object tokenizers/none/tokenizer.json not found",
    );
    await expect(getTokenizer("gemma3", { bucket })).rejects.toThrow(
      /in a Worker, put its tokenizer.json \+ tokenizer_config.json at tokenizers\/gemma3\//,
    );
  });
});
