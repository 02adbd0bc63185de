/**
 * `atropos-edge tokens create|list|revoke` against the real API (workerd, local D1): the command
 * functions with a fetch that enters the Worker app, as the CLI's HTTP requests would.
 */
import { describe, expect, it } from "vitest";
import { runTokensCreate, runTokensList, runTokensRevoke } from "../../src/cli/tokens-command";
import { callWith, uniqueRun } from "./helpers";

const ADMIN = "admin-secret-for-cli-tests";

function api(token: string | undefined) {
  const fetchApp: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    return callWith({ API_TOKEN: ADMIN }, `${url.pathname}${url.search}`, init);
  };
  return { api: "http://api.test/", token, fetch: fetchApp };
}

describe("atropos-edge tokens", () => {
  it("creates a token whose secret works, lists it without the secret, and revokes it", async () => {
    const run = uniqueRun("cli-tokens");
    const created = await runTokensCreate(api(ADMIN), {
      name: "alice",
      scope: ["contributor"],
      run,
      bytesPerDay: "1000000",
    });
    const secret = /secret \(shown once; store it now\): (aet_[0-9a-f]{64})/.exec(created)?.[1];
    expect(secret).toBeDefined();
    const id = created.split("  ")[0]!;
    expect(created).toContain(`alice  contributor  run ${run}  1000000 B/day  active`);
    // The secret is a contributor token of that run.
    const status = await callWith({ API_TOKEN: ADMIN }, `/v1/runs/${run}/stats`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(status.status).toBe(200);

    const listed = await runTokensList(api(ADMIN));
    expect(listed).toContain(`${id}  alice`);
    expect(listed).not.toContain(secret!);
    const asJson = JSON.parse(await runTokensList(api(ADMIN), true)) as { id: string }[];
    expect(asJson.map((t) => t.id)).toContain(id);

    expect(await runTokensRevoke(api(ADMIN), id)).toMatch(/ revoked \d{4}-/);
    const after = await callWith({ API_TOKEN: ADMIN }, `/v1/runs/${run}/stats`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(after.status).toBe(401);
  });

  it("says what is wrong: bad flags before any request, the server's message after", async () => {
    await expect(
      runTokensCreate(api(ADMIN), { name: "bob", scope: ["contributor"] }),
    ).rejects.toThrow(/must be bound to a run/);
    await expect(
      runTokensCreate(api(ADMIN), { name: "bob", scope: ["read"], rps: "fast" }),
    ).rejects.toThrow("--rps must be a positive number");
    await expect(runTokensList(api("wrong"))).rejects.toThrow(
      "GET /v1/tokens: HTTP 401: invalid or revoked API token",
    );
    await expect(runTokensRevoke(api(ADMIN), "tok_nope")).rejects.toThrow(/HTTP 404/);
  });
});
