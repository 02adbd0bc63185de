import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { openInference } from "../../../src/cli/inference";

const flags = {
  serverType: "vllm",
  model: "m",
  tokenizer: "qwen3",
  simLatencyMs: 0,
  simSeed: 1,
};

let server: Server | null = null;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(null)));
  server = null;
});

async function serve(status: number): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? "-"}`);
    res.statusCode = status;
    res.end("{}");
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

describe("openInference with --inference-url", () => {
  it("fails fast with what to do when nothing listens there", async () => {
    const { url } = await serve(200);
    await new Promise((resolve) => server!.close(resolve));
    server = null;
    await expect(openInference({ ...flags, inferenceUrl: url })).rejects.toThrow(
      `cannot reach the inference server at ${url} (ECONNREFUSED): check --inference-url`,
    );
  });

  it("says to check --api-key when the server refuses it", async () => {
    const { url, seen } = await serve(401);
    await expect(openInference({ ...flags, inferenceUrl: url, apiKey: "k" })).rejects.toThrow(
      /refused the request \(HTTP 401 on GET \/models\): check --api-key/,
    );
    expect(seen).toEqual(["GET /v1/models Bearer k"]);
  });

  it("accepts any other answer: the server is there (some have no /models)", async () => {
    const { url } = await serve(404);
    const handle = await openInference({ ...flags, inferenceUrl: `${url}/` });
    expect(handle.describe).toContain(`vllm server at ${url}/`);
    await handle.close();
  });
});
