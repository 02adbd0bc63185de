import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Client, ServerStalled } from "../../../bench/api/http";

let server: Server | null = null;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = null;
});

async function listen(handler: RequestListener): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("bench:api's load generator", () => {
  it("calls a server that answers nothing stalled, without retrying the POST", async () => {
    let received = 0;
    const url = await listen((req) => {
      received++;
      req.resume();
    });
    const client = new Client(url, {}, 1, 200);
    await expect(client.post("/scored_data", "{}")).rejects.toBeInstanceOf(ServerStalled);
    expect(received).toBe(1);
    expect(client.retries).toBe(0);
    await client.close();
  });

  it("answers a slow server that does answer", async () => {
    const url = await listen((req, res) => {
      req.resume();
      req.on("end", () => setImmediate(() => res.end('{"status":"received"}')));
    });
    const client = new Client(url, {}, 1, 5_000);
    await expect(client.post("/scored_data", "{}")).resolves.toContain("received");
    await client.close();
  });
});
