/**
 * The bundled tokenizer families (src/env-workers/tokenizers/bundled: brotli files + MANIFEST.json)
 * as R2 objects, and the uploads that put them there. A Worker cannot read the package's files,
 * so it reads a bundled family from `tokenizers/<family>/tokenizer.json.br` and
 * `tokenizer_config.json.br` in the PAYLOADS bucket. `tokenizers/<family>/bundled.json` records
 * which version is there (the manifest's sha256 of the plain files): a family is uploaded when
 * that marker is missing or differs, and the marker is written last, so an interrupted upload is
 * repeated.
 *
 * Used by scripts/dev.mjs (local state, at every start) and scripts/deploy.mjs (the account's
 * bucket, with wrangler).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const BUNDLED_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "src",
  "env-workers",
  "tokenizers",
  "bundled",
);
const FILE_NAMES = ["tokenizer.json", "tokenizer_config.json"];
const MARKER = "bundled.json";

function readManifest(dir) {
  return JSON.parse(readFileSync(join(dir, "MANIFEST.json"), "utf8"));
}

/** Every bundled family (the manifest's keys). */
export function bundledFamilies(dir = BUNDLED_DIR) {
  return Object.keys(readManifest(dir));
}

function markerOf(family, entry) {
  const files = Object.fromEntries(FILE_NAMES.map((name) => [name, entry.files[name].sha256]));
  return `${JSON.stringify({ family, source: entry.source, files })}\n`;
}

/**
 * The objects of one family, marker last: `{ key, body: Buffer }`. The files stay
 * brotli-compressed (`<name>.br`, 1.5–3.5 MB instead of 7–33 MB): the Worker decompresses them
 * (node:zlib), so an upload is quick. The source files are checked against MANIFEST.json where
 * they are read (src/env-workers/tokenizers/node-files.ts and the tokenizer tests).
 */
export function tokenizerObjects(family, dir = BUNDLED_DIR) {
  const entry = readManifest(dir)[family];
  if (!entry) throw new Error(`no bundled tokenizer ${family} in ${join(dir, "MANIFEST.json")}`);
  const objects = FILE_NAMES.map((name) => ({
    key: `tokenizers/${family}/${name}.br`,
    body: readFileSync(join(dir, family, `${name}.br`)),
  }));
  objects.push({
    key: `tokenizers/${family}/${MARKER}`,
    body: Buffer.from(markerOf(family, entry)),
  });
  return objects;
}

function expectedMarker(family, dir) {
  return markerOf(family, readManifest(dir)[family]);
}

/**
 * Uploads the families whose marker is missing or stale through an R2 binding's API (Miniflare's
 * getR2Bucket, a Worker's env.PAYLOADS). Returns the families it uploaded.
 */
export async function seedBucket(bucket, { dir = BUNDLED_DIR, families, log = () => {} } = {}) {
  const uploaded = [];
  for (const family of families ?? bundledFamilies(dir)) {
    const current = await bucket.get(`tokenizers/${family}/${MARKER}`);
    if (current && (await current.text()) === expectedMarker(family, dir)) continue;
    log(`uploading tokenizer ${family} to R2 (tokenizers/${family}/)`);
    for (const { key, body } of tokenizerObjects(family, dir)) {
      // A plain ArrayBuffer: Miniflare's binding proxy refuses Buffer views into a larger pool.
      const bytes = body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength);
      await bucket.put(key, bytes);
    }
    uploaded.push(family);
  }
  return uploaded;
}

/**
 * The same with wrangler's `r2 object get/put` (for the account's bucket: `--remote`).
 * `wrangler(args)` runs wrangler and returns spawnSync's result with stdout as a string.
 */
export function seedWithWrangler(
  wrangler,
  bucketName,
  { dir = BUNDLED_DIR, families, where = "--remote", log = () => {} } = {},
) {
  const uploaded = [];
  const temp = mkdtempSync(join(tmpdir(), "atropos-edge-tokenizers-"));
  try {
    for (const family of families ?? bundledFamilies(dir)) {
      const marker = wrangler([
        "r2",
        "object",
        "get",
        `${bucketName}/tokenizers/${family}/${MARKER}`,
        where,
        "--pipe",
      ]);
      if (marker.status === 0 && marker.stdout === expectedMarker(family, dir)) continue;
      log(`uploading tokenizer ${family} to R2 bucket ${bucketName} (tokenizers/${family}/)`);
      for (const { key, body } of tokenizerObjects(family, dir)) {
        const file = join(temp, key.replaceAll("/", "_"));
        writeFileSync(file, body);
        const put = wrangler([
          "r2",
          "object",
          "put",
          `${bucketName}/${key}`,
          "--file",
          file,
          where,
        ]);
        rmSync(file, { force: true });
        if (put.status !== 0) {
          throw new Error(
            `uploading ${key} to R2 bucket ${bucketName} failed: ${`${put.stdout ?? ""}${put.stderr ?? ""}`.trim()}`,
          );
        }
      }
      uploaded.push(family);
    }
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
  return uploaded;
}
