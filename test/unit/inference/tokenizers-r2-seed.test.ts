/**
 * The upload of bundled tokenizers into R2 (scripts/tokenizers-r2.mjs), used by the dev server
 * (into Miniflare's local R2, checked here against a real one) and by `npm run deploy` (through
 * wrangler, checked here with a recording stand-in): each family once, again only when stale.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BUNDLED_DIR,
  bundledFamilies,
  seedBucket,
  seedWithWrangler,
} from "../../../scripts/tokenizers-r2.mjs";
import { TOKENIZER_FAMILIES } from "../../../src/inference/tokenizers/registry";

const manifest = JSON.parse(readFileSync(join(BUNDLED_DIR, "MANIFEST.json"), "utf8")) as Record<
  string,
  { files: Record<string, { sha256: string }> }
>;
const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

let mf: Miniflare;
beforeAll(() => {
  mf = new Miniflare({ modules: true, script: "export default {}", r2Buckets: ["PAYLOADS"] });
});
afterAll(() => mf.dispose());

describe("bundled tokenizers into R2", () => {
  it("covers every bundled family", () => {
    expect(bundledFamilies().sort()).toEqual([...TOKENIZER_FAMILIES].sort());
  });

  it("uploads each family's brotli files and marker once, and again only when stale", async () => {
    const bucket = await mf.getR2Bucket("PAYLOADS");
    const families = ["qwen2_5", "mistral_nemo"];
    const lines: string[] = [];
    expect(await seedBucket(bucket, { families, log: (l) => lines.push(l) })).toEqual(families);
    expect(lines).toEqual([
      "uploading tokenizer qwen2_5 to R2 (tokenizers/qwen2_5/)",
      "uploading tokenizer mistral_nemo to R2 (tokenizers/mistral_nemo/)",
    ]);
    for (const family of families) {
      for (const name of ["tokenizer.json", "tokenizer_config.json"]) {
        const object = await bucket.get(`tokenizers/${family}/${name}.br`);
        const stored = new Uint8Array(await object!.arrayBuffer());
        expect(sha256(stored)).toBe(sha256(readFileSync(join(BUNDLED_DIR, family, `${name}.br`))));
      }
      const marker = JSON.parse(
        await (await bucket.get(`tokenizers/${family}/bundled.json`))!.text(),
      );
      expect(marker.files["tokenizer.json"]).toBe(
        manifest[family]!.files["tokenizer.json"]!.sha256,
      );
    }
    expect(await seedBucket(bucket, { families })).toEqual([]);

    await bucket.put("tokenizers/mistral_nemo/bundled.json", '{"files":{}}');
    expect(await seedBucket(bucket, { families })).toEqual(["mistral_nemo"]);
  });

  it("uploads through wrangler only what the account's bucket lacks", () => {
    const calls: string[][] = [];
    const upToDate = new Map<string, string>();
    const wrangler = (args: string[]) => {
      calls.push(args);
      const [, , verb, path] = args;
      if (verb === "get") {
        const marker = upToDate.get(path!);
        return marker ? { status: 0, stdout: marker } : { status: 1, stdout: "", stderr: "404" };
      }
      const file = args[args.indexOf("--file") + 1]!;
      if (path!.endsWith("/bundled.json")) upToDate.set(path!, readFileSync(file, "utf8"));
      return { status: 0, stdout: "" };
    };
    expect(seedWithWrangler(wrangler, "bucket-x", { families: ["qwen3"] })).toEqual(["qwen3"]);
    expect(calls.map((c) => `${c[2]} ${c[3]} ${c.at(-1)}`)).toEqual([
      "get bucket-x/tokenizers/qwen3/bundled.json --pipe",
      "put bucket-x/tokenizers/qwen3/tokenizer.json.br --remote",
      "put bucket-x/tokenizers/qwen3/tokenizer_config.json.br --remote",
      "put bucket-x/tokenizers/qwen3/bundled.json --remote",
    ]);
    expect(calls[0]).toContain("--remote");

    calls.length = 0;
    expect(seedWithWrangler(wrangler, "bucket-x", { families: ["qwen3"] })).toEqual([]);
    expect(calls).toHaveLength(1);

    const failing = (args: string[]) =>
      args[2] === "get"
        ? { status: 1, stdout: "" }
        : { status: 1, stdout: "", stderr: "Authentication error [code: 10000]" };
    expect(() => seedWithWrangler(failing, "bucket-x", { families: ["llama3"] })).toThrow(
      "uploading tokenizers/llama3/tokenizer.json.br to R2 bucket bucket-x failed: Authentication error [code: 10000]",
    );
  });
});
