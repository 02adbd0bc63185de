import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import type { BaseBindings } from "../../../src/api/base-bindings";
import { settingsOf, settingsSchema } from "../../../src/api/settings";

const ROOT = join(import.meta.dirname, "..", "..", "..");

/** The `vars` of a wrangler.jsonc (JSON with comments, read by TypeScript's JSONC parser). */
function varsOf(path: string): Record<string, string> {
  const parsed = ts.parseConfigFileTextToJson(path, readFileSync(join(ROOT, path), "utf8"));
  expect(parsed.error, path).toBeUndefined();
  return (parsed.config as { vars?: Record<string, string> }).vars ?? {};
}

const bindings = (vars: Record<string, string>) => vars as unknown as BaseBindings;

describe("settingsOf", () => {
  it("gives each unset var its one default", () => {
    const s = settingsOf(bindings({}));
    expect(s.MAX_BODY_BYTES).toBe(200 * 1024 * 1024);
    expect(s.MAX_INFLATED_BYTES).toBe(256 * 1024 * 1024);
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

  it.each(["wrangler.jsonc", "templates/project/wrangler.jsonc"])(
    "%s repeats a setting only with its one default",
    (path) => {
      const vars = varsOf(path);
      const defaults = settingsOf(bindings({}));
      const known = Object.keys(vars).filter((name) => name in settingsSchema.shape);
      // Both configs carry the body limits; a drifted copy would silently win over the schema.
      expect(known).toEqual(expect.arrayContaining(["MAX_BODY_BYTES", "MAX_INFLATED_BYTES"]));
      for (const name of known) {
        expect(settingsOf(bindings({ [name]: vars[name]! })), `${path}: ${name}`).toEqual(defaults);
      }
    },
  );
});
