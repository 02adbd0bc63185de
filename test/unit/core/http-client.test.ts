import { describe, expect, it } from "vitest";
import { ApiResponseError, HttpClient, parseJsonAnswer } from "../../../src/core/wire/http-client";

function scripted(answers: (number | Error)[]) {
  const seen: { url: string; init: RequestInit }[] = [];
  const fetchImpl = (async (url: string, init: RequestInit) => {
    seen.push({ url, init });
    const next = answers.shift();
    if (next instanceof Error) throw next;
    return new Response(JSON.stringify({ ok: next }), { status: next ?? 200 });
  }) as unknown as typeof fetch;
  return { fetchImpl, seen };
}

const noWait = async () => {};

describe("HttpClient", () => {
  it("retries network errors and 5xx, then returns the first answer below 500", async () => {
    const { fetchImpl, seen } = scripted([new Error("ECONNREFUSED"), 503, 200]);
    const http = new HttpClient({
      token: "t0k",
      attempts: 4,
      baseDelayMs: 1,
      maxDelayMs: 1,
      fetch: fetchImpl,
      sleep: noWait,
    });
    const res = await http.send("POST", "http://api/x", { json: { a: 1 } });
    expect(res.status).toBe(200);
    expect(seen).toHaveLength(3);
    expect(seen[2]!.init.headers).toMatchObject({
      Authorization: "Bearer t0k",
      "Content-Type": "application/json",
    });
    expect(seen[2]!.init.body).toBe('{"a":1}');
  });

  it("returns the last 5xx when attempts run out, and never retries a 4xx", async () => {
    const five = scripted([502, 502]);
    const http = (f: typeof fetch) =>
      new HttpClient({ attempts: 2, baseDelayMs: 1, maxDelayMs: 1, fetch: f, sleep: noWait });
    expect((await http(five.fetchImpl).send("GET", "http://api/x")).status).toBe(502);
    const four = scripted([409, 200]);
    expect((await http(four.fetchImpl).send("GET", "http://api/x")).status).toBe(409);
    expect(four.seen).toHaveLength(1);
  });

  it("throws the last network error when every attempt fails", async () => {
    const { fetchImpl } = scripted([new Error("down"), new Error("still down")]);
    const http = new HttpClient({
      attempts: 2,
      baseDelayMs: 1,
      maxDelayMs: 1,
      fetch: fetchImpl,
      sleep: noWait,
    });
    await expect(http.send("GET", "http://api/x")).rejects.toThrow("still down");
  });
});

describe("parseJsonAnswer", () => {
  it("reports the server's own message for an error status", () => {
    const body = JSON.stringify({ error: { code: "CONFLICT", message: "lease expired" } });
    expect(() => parseJsonAnswer({ status: 409, text: body }, "ack")).toThrow(
      "ack: HTTP 409: lease expired",
    );
    const fastapi = JSON.stringify({ detail: [{ msg: "field required" }] });
    try {
      parseJsonAnswer({ status: 422, text: fastapi }, "submit");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ApiResponseError);
      expect((error as ApiResponseError).status).toBe(422);
      expect((error as Error).message).toContain("field required");
    }
  });

  it("refuses a body that is not JSON", () => {
    expect(() => parseJsonAnswer({ status: 200, text: "<html>" }, "stats")).toThrow(
      "stats: response is not JSON",
    );
    expect(parseJsonAnswer<{ a: number }>({ status: 200, text: '{"a":1}' }, "x")).toEqual({ a: 1 });
  });
});
