import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getTokenizer } from "../../../src/inference/tokenizers/index";

const TINY_DIR = fileURLToPath(new URL("../../fixtures/tokenizers/tiny/", import.meta.url));
const golden = JSON.parse(
  readFileSync(new URL("../../fixtures/tokenizers/tiny.json", import.meta.url), "utf8"),
) as {
  texts: { text: string; ids: number[] }[];
  chats: { messages: { role: string; content: string }[]; text: string; ids: number[] }[];
};

let server: Server;
let baseUrl: string;
const requests: string[] = [];

beforeAll(async () => {
  process.env.ATROPOS_EDGE_CACHE_DIR = mkdtempSync(path.join(tmpdir(), "tok-cache-"));
  server = createServer((req, res) => {
    requests.push(req.url ?? "");
    const match =
      /^\/(?:files|hub\/org\/tiny-model\/resolve\/main)\/(tokenizer(?:_config)?\.json)$/.exec(
        req.url ?? "",
      );
    if (!match) {
      res.writeHead(404).end("no");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(readFileSync(path.join(TINY_DIR, match[1]!)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  delete process.env.ATROPOS_EDGE_CACHE_DIR;
  delete process.env.HF_ENDPOINT;
});

async function expectGolden(source: string) {
  const tokenizer = await getTokenizer(source);
  for (const { text, ids } of golden.texts) {
    expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual(ids);
  }
  const chat = golden.chats[0]!;
  expect(tokenizer.applyChatTemplate(chat.messages, { addGenerationPrompt: true })).toBe(chat.text);
  expect(tokenizer.eosTokenId).toBe(tokenizer.tokenId("<|im_end|>"));
  expect(tokenizer.bosTokenId).toBeNull();
  expect(tokenizer.stopTokenIds).toEqual([
    tokenizer.tokenId("<|im_end|>"),
    tokenizer.tokenId("<|endoftext|>"),
  ]);
  return tokenizer;
}

describe("tokenizer sources", () => {
  it("loads any tokenizer.json + tokenizer_config.json from a directory, cached per path", async () => {
    const tokenizer = await expectGolden(TINY_DIR);
    expect(await getTokenizer(`${TINY_DIR}/`)).toBe(tokenizer);
    expect(await getTokenizer(path.relative(process.cwd(), TINY_DIR))).toBe(tokenizer);
  });

  it("loads from a URL once, then from the disk cache", async () => {
    await expectGolden(`${baseUrl}/files`);
    expect(requests.filter((r) => r.startsWith("/files/")).sort()).toEqual([
      "/files/tokenizer.json",
      "/files/tokenizer_config.json",
    ]);
    // A fresh loader (other process) with the same cache reads no URL again.
    const { downloadCached } = await import("../../../src/inference/tokenizers/node-files");
    const noFetch = (() => Promise.reject(new Error("network used"))) as typeof fetch;
    const files = await downloadCached(`${baseUrl}/files`, noFetch);
    expect(Object.keys(files.tokenizerJson.model.vocab as object)).toHaveLength(400);
  });

  it("resolves a Hugging Face id through HF_ENDPOINT (never the internet in tests)", async () => {
    process.env.HF_ENDPOINT = `${baseUrl}/hub`;
    await expectGolden("org/tiny-model");
    expect(requests).toContain("/hub/org/tiny-model/resolve/main/tokenizer.json");
  });

  it("says what is wrong with a bad source", async () => {
    await expect(getTokenizer(`${baseUrl}/missing`)).rejects.toThrow(
      /GET .*\/missing\/tokenizer.*404/,
    );
    await expect(getTokenizer("gpt2")).rejects.toThrow(
      /No tokenizer "gpt2": not a bundled family \(qwen2_5, qwen3, llama3.*directory/,
    );
    await expect(getTokenizer("r2://tokenizers/x")).rejects.toThrow(/need a bucket/);
    const empty = mkdtempSync(path.join(tmpdir(), "tok-empty-"));
    await expect(getTokenizer(empty)).rejects.toThrow(/cannot read tokenizer.json/);
  });

  it("offline, names the tokenizer wanted, the unreachable Hub and how to pass a directory", async () => {
    const offline = (() =>
      Promise.reject(
        Object.assign(new TypeError("fetch failed"), {
          cause: Object.assign(new Error("getaddrinfo ENOTFOUND huggingface.co"), {
            code: "ENOTFOUND",
          }),
        }),
      )) as typeof fetch;
    process.env.HF_ENDPOINT = "https://hub.invalid";
    const error = await getTokenizer("acme/offline-model", { fetch: offline }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).not.toMatch(/^fetch failed$/);
    expect(message).toMatch(/tokenizer "acme\/offline-model" is not bundled/);
    expect(message).toMatch(/Hub \(https:\/\/hub.invalid\) could not be reached \(ENOTFOUND\)/);
    expect(message).toMatch(/--tokenizer \.\/offline-model-tokenizer/);
    // A Hub that answers 404 says so, with the same way out.
    process.env.HF_ENDPOINT = `${baseUrl}/hub`;
    await expect(getTokenizer("org/absent-model")).rejects.toThrow(
      /"org\/absent-model" is not bundled.*answered HTTP 404.*directory/,
    );
  });
});
