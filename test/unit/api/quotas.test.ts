import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/api/errors";
import { checkRate } from "../../../src/api/middleware/quotas";
import type { StoredToken } from "../../../src/api/storage/tokens";
import { scopesAllow } from "../../../src/core/wire/tokens";

function token(id: string, rpsLimit: number | null): StoredToken {
  return {
    id,
    name: id,
    scopes: ["read"],
    run: null,
    rpsLimit,
    bytesPerDay: null,
    proxyTokensPerDay: null,
  };
}

function refusal(fn: () => void): ApiError | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

describe("requests-per-second quota", () => {
  it("allows a burst of twice the rate, then refills at the rate", () => {
    const t = token("bucket-a", 2);
    const start = 1_000_000;
    for (let i = 0; i < 4; i++) expect(refusal(() => checkRate(t, start))).toBeNull();
    const over = refusal(() => checkRate(t, start));
    expect(over?.status).toBe(429);
    expect(over?.headers).toEqual({ "Retry-After": "1" });
    // Half a second at 2/s refills one request, and only one.
    expect(refusal(() => checkRate(t, start + 500))).toBeNull();
    expect(refusal(() => checkRate(t, start + 500))?.status).toBe(429);
  });

  it("says how long to wait at slow rates, and ignores tokens without a limit", () => {
    const slow = token("bucket-b", 0.1);
    expect(refusal(() => checkRate(slow, 0))).toBeNull();
    expect(refusal(() => checkRate(slow, 0))?.headers).toEqual({ "Retry-After": "10" });
    const free = token("bucket-c", null);
    for (let i = 0; i < 100; i++) expect(refusal(() => checkRate(free, 0))).toBeNull();
  });
});

describe("scope grants", () => {
  it("matches the documented matrix", () => {
    expect(scopesAllow(["admin"], "admin")).toBe(true);
    expect(scopesAllow(["trainer"], "read")).toBe(true);
    expect(scopesAllow(["trainer"], "env")).toBe(false);
    expect(scopesAllow(["env"], "contributor")).toBe(true);
    expect(scopesAllow(["env"], "read")).toBe(false);
    expect(scopesAllow(["contributor"], "read")).toBe(false);
    expect(scopesAllow(["read"], "contributor")).toBe(false);
    expect(scopesAllow(["read", "env"], "read")).toBe(true);
  });
});
