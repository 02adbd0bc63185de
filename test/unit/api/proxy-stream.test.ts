import { describe, expect, it } from "vitest";
import { type StreamRequest, streamProxyCall } from "../../../src/api/proxy-stream";

/** The events of an SSE body, each parsed (`[DONE]` kept as a string). */
async function events(res: Response): Promise<unknown[]> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => block.slice("data: ".length))
    .map((data) => (data === "[DONE]" ? data : JSON.parse(data)));
}

const request = (overrides: Partial<StreamRequest>): StreamRequest => ({
  kind: "chat",
  model: "m",
  includeUsage: false,
  call: async () => ({ choices: [] }),
  record: async () => {},
  fail: async (error) => ({ status: 502, type: "upstream_error", message: String(error) }),
  ...overrides,
});

describe("streamProxyCall", () => {
  it("tells the client about a failed call even when settling that failure throws", async () => {
    const res = streamProxyCall(
      request({
        call: async () => {
          throw new Error("upstream refused");
        },
        fail: async () => {
          throw new Error("D1 unavailable");
        },
      }),
    );
    const [, last] = await events(res);
    expect(last).toEqual({
      error: {
        status: 500,
        code: 500,
        type: "proxy_error",
        message: "upstream refused (and settling the failed call failed: D1 unavailable)",
      },
    });
  });

  it("sends the settled failure's status and message", async () => {
    const res = streamProxyCall(
      request({
        call: async () => {
          throw new Error("upstream refused");
        },
      }),
    );
    const [, last] = await events(res);
    expect(last).toMatchObject({ error: { code: 502, message: "Error: upstream refused" } });
  });
});
