import { describe, expect, it } from "vitest";
import type { BaseBindings } from "../../../src/api/base-bindings";
import { settingsOf } from "../../../src/api/settings";

const bindings = (vars: Record<string, string>) => vars as unknown as BaseBindings;

describe("settingsOf", () => {
  it("gives each unset var its one default", () => {
    const s = settingsOf(bindings({}));
    expect(s.MAX_BODY_BYTES).toBe(64 * 1024 * 1024);
    expect(s.BODY_IDLE_TIMEOUT_MS).toBe(30_000);
    expect(s.MAX_LIST_GROUPS).toBe(1024);
    expect(s.PROXY_SESSION_TTL_S).toBe(3600);
    expect(s.GUARD_WEBHOOK_ALLOW_PRIVATE).toBe(false);
  });

  it("reads set vars, and a var that is not a number falls back to its default", () => {
    const s = settingsOf(
      bindings({ MAX_BODY_BYTES: "209715200", ENV_STALE_SECONDS: "soon", RETENTION_HOURS: "2" }),
    );
    expect(s.MAX_BODY_BYTES).toBe(209_715_200);
    expect(s.ENV_STALE_SECONDS).toBe(120);
    expect(s.RETENTION_HOURS).toBe(2);
  });

  it("allows private webhooks only for the exact value true", () => {
    expect(
      settingsOf(bindings({ GUARD_WEBHOOK_ALLOW_PRIVATE: "true" })).GUARD_WEBHOOK_ALLOW_PRIVATE,
    ).toBe(true);
    expect(
      settingsOf(bindings({ GUARD_WEBHOOK_ALLOW_PRIVATE: "yes" })).GUARD_WEBHOOK_ALLOW_PRIVATE,
    ).toBe(false);
  });
});
