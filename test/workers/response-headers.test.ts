import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import type { AppEnv } from "../../src/api/context";
import { cors } from "../../src/api/middleware/cors";
import { drainUnreadBody } from "../../src/api/middleware/drain-body";
import { gzipResponse } from "../../src/api/middleware/gzip-response";
import { requestContext } from "../../src/api/middleware/request-context";
import { call, callWith, group, post, setupRun, uniqueRun } from "./helpers";

const ORIGIN = "https://lab.example";

/** The app's response middleware in its order, around routes answering in the ways handlers do. */
function appWith(forwarded: () => Promise<Response>) {
  const app = new Hono<AppEnv>();
  app.use("*", drainUnreadBody, requestContext, cors, gzipResponse);
  app.get("/small", (c) => {
    c.get("timings").record("work", 2);
    return c.json({ ok: true }, 201);
  });
  app.get("/large", (c) => c.json({ rows: Array.from({ length: 400 }, (_, i) => `row ${i}`) }));
  app.get("/forwarded", () => forwarded());
  return app;
}

function fetchApp(app: Hono<AppEnv>, path: string, headers: Record<string, string>) {
  const bindings = { ...(env as unknown as Bindings), CORS_ORIGINS: ORIGIN };
  return app.request(path, { headers: { origin: ORIGIN, ...headers } }, bindings);
}

describe("headers set after the handler", () => {
  it("reach a response the app built, with its status and body unchanged", async () => {
    const app = appWith(() => call("/"));
    for (const encoding of ["gzip", "identity"]) {
      const res = await fetchApp(app, "/small", {
        "x-request-id": "req-7",
        "accept-encoding": encoding,
      });
      expect(res.status).toBe(201);
      expect(await res.json()).toEqual({ ok: true });
      expect(res.headers.get("x-request-id")).toBe("req-7");
      expect(res.headers.get("server-timing")).toContain("work;dur=2");
      expect(res.headers.get("vary")).toBe("Origin");
      expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      expect(res.headers.get("cache-control")).toBe("no-transform");
      expect(res.headers.get("content-type")).toContain("application/json");
    }
  });

  it("reach a gzipped response, which keeps its own headers", async () => {
    const res = await fetchApp(
      appWith(() => call("/")),
      "/large",
      { "accept-encoding": "gzip" },
    );
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect(res.headers.get("vary")).toBe("Accept-Encoding, Origin");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const body = await new Response(res.body!.pipeThrough(new DecompressionStream("gzip"))).json<{
      rows: string[];
    }>();
    expect(body.rows).toHaveLength(400);
  });

  it("reach a response whose headers are immutable (fetched through a binding)", async () => {
    const probe = await call("/");
    await probe.arrayBuffer();
    // The case under test: such a response refuses changes in place.
    expect(() => probe.headers.set("x-probe", "1")).toThrow(TypeError);

    const app = appWith(() => call("/"));
    for (const encoding of ["gzip", "identity"]) {
      const res = await fetchApp(app, "/forwarded", {
        "x-request-id": "req-8",
        "accept-encoding": encoding,
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toHaveProperty("message");
      expect(res.headers.get("x-request-id")).toBe("req-8");
      expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      expect(res.headers.get("cache-control")).toContain("no-transform");
    }
  });
});

describe("the request log", () => {
  afterEach(() => vi.restoreAllMocks());

  /** The paths and statuses of the request lines `send` made the app log. */
  async function logged(send: () => Promise<Response>) {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const res = await send();
    await res.arrayBuffer();
    const lines = log.mock.calls
      .map(([line]) => JSON.parse(String(line)) as { msg: string; path: string; status: number })
      .filter((line) => line.msg === "request");
    log.mockRestore();
    return lines.map(({ path, status }) => `${status} ${path}`);
  }

  it("has a line for every batch request but a pull that found none and changed nothing", async () => {
    const run = uniqueRun("log");
    const base = `/runs/${run}`;
    const pull = () => callWith({}, `${base}/batch`);
    expect(await logged(pull)).toEqual([`200 ${base}/batch`]); // not registered: a trainer's error
    const { envIds } = await setupRun(run, 4, [4]);
    expect(await logged(pull)).toEqual([]);

    await post(`${base}/scored_data`, group(1, 4, envIds[0]!));
    expect(await logged(pull)).toEqual([`200 ${base}/batch`]);
    // Empty, but it acknowledged the batch just pulled.
    expect(await logged(pull)).toEqual([`200 ${base}/batch`]);
    expect(await logged(pull)).toEqual([]);

    const lease = `/v1/runs/${run}/batches/lease`;
    const leased = () => callWith({}, lease, { method: "POST" });
    expect(await logged(leased)).toEqual([]);
    await post(`${base}/scored_data`, group(2, 4, envIds[0]!));
    const res = await leased();
    const { batch_id, lease_id } = await res.json<{ batch_id: string; lease_id: string }>();
    const ack = `/v1/runs/${run}/batches/${batch_id}/ack`;
    const acked = () =>
      callWith({}, ack, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ lease_id }),
      });
    expect(await logged(acked)).toEqual([`200 ${ack}`]);

    expect(await logged(() => callWith({}, `${base}/no-such-route`))).toEqual([
      `404 ${base}/no-such-route`,
    ]);
  });
});
