/**
 * Access control, generated from the route table (the list /openapi.json is built from): every
 * route is called with a token of each scope, and is let through or refused exactly as the scope
 * matrix below says. Then what a contributor token bound to one run can and cannot do, token
 * lifecycle (list, revoke) and attribution of groups to tokens.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/api/app";
import { routeTable } from "../../src/api/routes";
import type { Scope } from "../../src/core/wire/tokens";
import { callWith, group, json, REGISTRATION, uniqueRun } from "./helpers";

const ADMIN = "admin-secret-for-scope-tests";

/** The scope matrix: which route scopes a token of each scope may call. */
const MATRIX: Record<Scope, readonly Scope[]> = {
  admin: ["admin", "trainer", "env", "contributor", "read"],
  trainer: ["trainer", "read"],
  env: ["env", "contributor"],
  contributor: ["contributor"],
  read: ["read"],
};
/** Served to anyone, token or not. */
const PUBLIC = new Set(["GET /", "GET /openapi.json"]);

function request(path: string, init: RequestInit & { token?: string } = {}) {
  const { token, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
  return callWith({ API_TOKEN: ADMIN }, path, { ...rest, headers });
}

function send(path: string, method: string, token: string | undefined, body?: unknown) {
  return request(path, {
    method,
    token,
    ...(body === undefined
      ? {}
      : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
}

interface Created {
  id: string;
  secret: string;
  scopes: Scope[];
  run: string | null;
}

async function createToken(body: Record<string, unknown>): Promise<Created> {
  const res = await send("/v1/tokens", "POST", ADMIN, body);
  expect(res.status, await res.clone().text()).toBe(200);
  return json<Created>(res);
}

/** Path parameters filled in so the route matches (the values need not exist). */
function concretePath(path: string, run: string): string {
  return path
    .replaceAll("{run}", run)
    .replaceAll("{batchId}", "no-such-batch")
    .replaceAll("{id}", "1")
    .replaceAll("{envId}", "0")
    .replaceAll("{step}", "1")
    .replaceAll("{env}", "no-such-env")
    .replaceAll("{instance}", "0");
}

async function setupRun(run: string, token: string) {
  const base = `/runs/${run}`;
  expect((await send(`${base}/register`, "POST", token, REGISTRATION)).status).toBe(200);
  const env = await json<{ env_id: number }>(
    send(`${base}/register-env`, "POST", token, {
      max_token_length: 1024,
      desired_name: "env",
      weight: 1,
      group_size: 2,
    }),
  );
  return env.env_id;
}

describe("scopes", () => {
  it("lets every route through or refuses it exactly as the scope matrix says", async () => {
    const run = uniqueRun("scopes");
    const table = routeTable(createApp());
    expect(table.length).toBeGreaterThan(30);
    const tokens = new Map<Scope, Created>();
    for (const scope of Object.keys(MATRIX) as Scope[]) {
      tokens.set(
        scope,
        await createToken({
          name: `${scope}-matrix`,
          scopes: [scope],
          run: scope === "contributor" ? run : null,
        }),
      );
    }
    // Admin last: its reset and env-worker calls act for real.
    const roles: Scope[] = ["read", "contributor", "env", "trainer", "admin"];
    const mismatches: string[] = [];
    for (const route of table) {
      const path = concretePath(route.path, run);
      const where = `${route.method} ${route.path}`;
      const body = ["POST", "PUT"].includes(route.method) ? {} : undefined;
      const anonymous = await send(path, route.method, undefined, body);
      const expectAnonymous = PUBLIC.has(where) ? "allowed" : 401;
      const gotAnonymous = [401, 403].includes(anonymous.status) ? anonymous.status : "allowed";
      if (gotAnonymous !== expectAnonymous) {
        mismatches.push(`${where} without a token: ${anonymous.status}`);
      }
      for (const role of roles) {
        const scopeAllows =
          MATRIX[role].includes(route.scope) || (role === "contributor" && route.contributorOwn);
        // The contributor token is bound to `run`: routes of no run, or of run "default" (the
        // Atropos paths at the root), are refused however its scope stands.
        const runAllows = role !== "contributor" || route.path.includes("{run}");
        const allowed = PUBLIC.has(where) || (scopeAllows && runAllows);
        const res = await send(path, route.method, tokens.get(role)!.secret, body);
        const refused = res.status === 401 || res.status === 403;
        if (refused === allowed) {
          mismatches.push(`${where} as ${role}: ${res.status} ${await res.text()}`);
        } else if (refused && !scopeAllows) {
          // A valid token that lacks the scope: 403 naming the scope needed.
          expect(res.status, where).toBe(403);
          expect(((await res.json()) as { detail: string }).detail, where).toContain(
            `'${route.scope}' scope`,
          );
        }
      }
    }
    expect(mismatches).toEqual([]);
  });

  it("keeps a contributor to submitting to its run and reading its own groups", async () => {
    const runA = uniqueRun("contrib-a");
    const runB = uniqueRun("contrib-b");
    const envA = await setupRun(runA, ADMIN);
    const envB = await setupRun(runB, ADMIN);
    const contributor = await createToken({ name: "alice", scopes: ["contributor"], run: runA });
    const envToken = await createToken({ name: "env-a", scopes: ["env"] });
    const c = contributor.secret;

    const mine = await send(`/runs/${runA}/scored_data`, "POST", c, group(1, 2, envA));
    expect(await mine.json()).toEqual({ status: "received" });
    const list = await send(`/runs/${runA}/scored_data_list`, "POST", c, [group(2, 2, envA)]);
    expect(list.status).toBe(200);

    // Another run: refused, whatever the route.
    const other = await send(`/runs/${runB}/scored_data`, "POST", c, group(3, 2, envB));
    expect(other.status).toBe(403);
    expect(await other.text()).toContain(`bound to run '${runA}', not '${runB}'`);
    // The root paths address run "default".
    expect((await send("/scored_data", "POST", c, group(3, 2, null))).status).toBe(403);
    expect((await send(`/v1/runs/${runB}/stats`, "GET", c)).status).toBe(403);
    expect((await send(`/v1/runs/${runB}/groups`, "GET", c)).status).toBe(403);
    expect((await send("/v1/runs", "GET", c)).status).toBe(403);

    // No batches, leases or trainer routes, even on its own run.
    expect((await send(`/v1/runs/${runA}/batches/lease`, "POST", c, {})).status).toBe(403);
    expect((await send(`/v1/runs/${runA}/batches`, "GET", c)).status).toBe(403);
    expect((await send(`/runs/${runA}/batch`, "GET", c)).status).toBe(403);
    expect((await send(`/runs/${runA}/latest_example`, "GET", c)).status).toBe(403);
    expect((await send(`/runs/${runA}/register-env`, "POST", c, {})).status).toBe(403);

    // Its own run's stats, and only its own groups.
    expect((await send(`/v1/runs/${runA}/stats`, "GET", c)).status).toBe(200);
    const theirs = await send(
      `/runs/${runA}/scored_data`,
      "POST",
      envToken.secret,
      group(4, 2, envA),
    );
    expect(theirs.status).toBe(200);
    const admin = await json<{ groups: { id: number; token_id: string | null }[] }>(
      send(`/v1/runs/${runA}/groups`, "GET", ADMIN),
    );
    expect(admin.groups.map((g) => g.token_id).sort()).toEqual(
      [contributor.id, contributor.id, envToken.id].sort(),
    );
    const own = await json<{ groups: { id: number; token_id: string }[] }>(
      send(`/v1/runs/${runA}/groups`, "GET", c),
    );
    expect(own.groups.map((g) => g.token_id)).toEqual([contributor.id, contributor.id]);
    const ownId = own.groups[0]!.id;
    const otherId = admin.groups.find((g) => g.token_id === envToken.id)!.id;
    const ownGroup = await send(`/v1/runs/${runA}/groups/${ownId}`, "GET", c);
    expect(ownGroup.status).toBe(200);
    expect(((await ownGroup.json()) as { group: { token_id: string } }).group.token_id).toBe(
      contributor.id,
    );
    expect((await send(`/v1/runs/${runA}/groups/${otherId}`, "GET", c)).status).toBe(404);

    // Stats per token: everyone's for the admin, its own for the contributor.
    type ByToken = { by_token: { token_id: string | null; groups: number }[] };
    const adminStats = await json<ByToken>(send(`/v1/runs/${runA}/stats`, "GET", ADMIN));
    expect(adminStats.by_token.find((t) => t.token_id === contributor.id)?.groups).toBe(2);
    expect(adminStats.by_token.find((t) => t.token_id === envToken.id)?.groups).toBe(1);
    const ownStats = await json<ByToken>(send(`/v1/runs/${runA}/stats`, "GET", c));
    expect(ownStats.by_token).toEqual([
      expect.objectContaining({ token_id: contributor.id, groups: 2 }),
    ]);
    // Groups submitted with API_TOKEN are attributed to no token.
    await send(`/runs/${runA}/scored_data`, "POST", ADMIN, group(5, 2, envA));
    const latest = await json<{ groups: { token_id: string | null }[] }>(
      send(`/v1/runs/${runA}/groups?limit=1`, "GET", ADMIN),
    );
    expect(latest.groups[0]!.token_id).toBeNull();
  });

  it("lists tokens without secrets, revokes them, and keeps them across a reset", async () => {
    const run = uniqueRun("token-life");
    const created = await createToken({ name: "trainer-1", scopes: ["trainer"], run });
    expect(created.secret).toMatch(/^aet_[0-9a-f]{64}$/);
    expect((await send(`/runs/${run}/status`, "GET", created.secret)).status).toBe(200);
    // Also as the HTTP Basic password, as unmodified clients send it.
    const basic = await request(`/runs/${run}/status`, {
      headers: { authorization: `Basic ${btoa(`user:${created.secret}`)}` },
    });
    expect(basic.status).toBe(200);

    const listed = await send("/v1/tokens", "GET", ADMIN);
    const text = await listed.text();
    expect(text).toContain(created.id);
    expect(text).not.toContain(created.secret);
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(created.secret));
    const hash = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
    expect(text).not.toContain(hash);
    expect(text).not.toContain("secret");

    // Only admin manages tokens; a reset leaves them alone.
    expect((await send("/v1/tokens", "GET", created.secret)).status).toBe(403);
    expect((await send(`/runs/${run}/reset_data`, "POST", ADMIN)).status).toBe(200);
    expect((await send(`/runs/${run}/status`, "GET", created.secret)).status).toBe(200);

    const revoked = await send(`/v1/tokens/${created.id}`, "DELETE", ADMIN);
    expect(((await revoked.json()) as { revoked_at: number | null }).revoked_at).toBeGreaterThan(0);
    const after = await send(`/runs/${run}/status`, "GET", created.secret);
    expect(after.status).toBe(401);
    expect(await after.text()).toContain("invalid or revoked");
    expect((await send("/v1/tokens/tok_nope", "DELETE", ADMIN)).status).toBe(404);
  });

  it("refuses token requests that make no sense", async () => {
    const unbound = await send("/v1/tokens", "POST", ADMIN, { name: "x", scopes: ["contributor"] });
    expect(unbound.status).toBe(422);
    expect(await unbound.text()).toContain("must be bound to a run");
    const unknown = await send("/v1/tokens", "POST", ADMIN, { name: "x", scopes: ["root"] });
    expect(unknown.status).toBe(422);
  });

  it("answers 429 with Retry-After over a token's requests-per-second quota", async () => {
    const run = uniqueRun("rps");
    // 0.5/s: a burst of one request, then one every 2 s (slow enough for a loaded machine).
    const token = await createToken({ name: "rps", scopes: ["read"], rps_limit: 0.5 });
    expect((await send(`/runs/${run}/status`, "GET", token.secret)).status).toBe(200);
    const over = await send(`/runs/${run}/status`, "GET", token.secret);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await over.text()).toContain("requests-per-second quota (0.5/s)");
    // Other tokens are not affected.
    expect((await send(`/runs/${run}/status`, "GET", ADMIN)).status).toBe(200);
  });

  it("answers 429 with Retry-After over a token's bytes-per-day quota", async () => {
    const run = uniqueRun("bytes");
    const envId = await setupRun(run, ADMIN);
    const size = JSON.stringify(group(1, 2, envId)).length;
    const token = await createToken({
      name: "bytes",
      scopes: ["contributor"],
      run,
      bytes_per_day: Math.floor(size * 1.5),
    });
    const first = await send(`/runs/${run}/scored_data`, "POST", token.secret, group(1, 2, envId));
    expect(first.status).toBe(200);
    const second = await send(`/runs/${run}/scored_data`, "POST", token.secret, group(2, 2, envId));
    expect(second.status).toBe(429);
    expect(await second.text()).toContain("bytes-per-day quota");
    const retryAfter = Number(second.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    // Refused bodies are not stored, and not counted.
    const stats = await json<{ by_token: { token_id: string; groups: number }[] }>(
      send(`/v1/runs/${run}/stats`, "GET", ADMIN),
    );
    expect(stats.by_token).toEqual([expect.objectContaining({ token_id: token.id, groups: 1 })]);
    const usage = await env.DB.prepare("SELECT bytes FROM token_usage WHERE token_id = ?1")
      .bind(token.id)
      .first<{ bytes: number }>();
    expect(usage?.bytes).toBe(size);
  });
});

describe("the retry window per token", () => {
  it("keeps body-hash and Idempotency-Key dedupe to the token that submitted", async () => {
    const run = uniqueRun("dedupe-token");
    const envId = await setupRun(run, ADMIN);
    const [alice, bob] = await Promise.all(
      ["alice", "bob"].map((name) => createToken({ name, scopes: ["contributor"], run })),
    );
    const submit = (token: string, body: unknown, key?: string) =>
      request(`/runs/${run}/scored_data`, {
        method: "POST",
        token,
        headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
        body: JSON.stringify(body),
      });
    // The same body from two contributors is two contributions; from one, a retry.
    expect(await json(submit(alice!.secret, group(1, 2, envId)))).toEqual({ status: "received" });
    expect(await json(submit(bob!.secret, group(1, 2, envId)))).toEqual({ status: "received" });
    expect(await json(submit(bob!.secret, group(1, 2, envId)))).toMatchObject({ duplicate: true });
    // One key name used by two contributors for different bodies: neither is a replay or a 422.
    const a = await submit(alice!.secret, group(2, 2, envId), "k-1");
    const b = await submit(bob!.secret, group(3, 2, envId), "k-1");
    expect(a.status).toBe(200);
    expect(b.status, await b.clone().text()).toBe(200);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    const again = await submit(bob!.secret, group(3, 2, envId), "k-1");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    // API_TOKEN keeps the run-wide window Atropos clients rely on.
    expect(await json(submit(ADMIN, group(4, 2, envId)))).toEqual({ status: "received" });
    expect(await json(submit(ADMIN, group(4, 2, envId)))).toMatchObject({ duplicate: true });
    const stats = await json<{ by_token: { token_id: string; groups: number }[] }>(
      send(`/v1/runs/${run}/stats`, "GET", ADMIN),
    );
    const groups = (id: string) => stats.by_token.find((t) => t.token_id === id)?.groups;
    expect([groups(alice!.id), groups(bob!.id)]).toEqual([2, 2]);
  });
});
