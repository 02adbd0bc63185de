/**
 * The bundled tokenizer families (src/inference/tokenizers/bundled: brotli files + MANIFEST.json)
 * as R2 objects, and the uploads that put them there. A Worker cannot read the package's files,
 * so it reads a bundled family from `tokenizers/<family>/tokenizer.json.br` and
 * `tokenizer_config.json.br` in the PAYLOADS bucket. `tokenizers/<family>/bundled.json` records
 * which version is there (the manifest's sha256 of the plain files): a family is uploaded when
 * that marker is missing or differs, and the marker is written last, so an interrupted upload is
 * repeated.
 *
 * Used by scripts/dev.mjs (local state, at every start) and scripts/deploy.mjs (the account's
 * bucket, with wrangler). Run on its own (a project made by `atropos-edge init` has no
 * deploy.mjs):
 *   node node_modules/atropos-edge/scripts/tokenizers-r2.mjs [--remote | --local
 *        [--persist-to DIR]] [--config wrangler.jsonc]
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const BUNDLED_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "src",
  "inference",
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
 * they are read (src/inference/tokenizers/node-files.ts and the tokenizer tests).
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

/** `node tokenizers-r2.mjs …`: the upload for the project in the current directory. */
async function main(argv) {
  const value = (flag) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const known = new Set(["--remote", "--local", "--config", "--persist-to"]);
  const unknown = argv.find(
    (a, i) => a.startsWith("-") && !known.has(a) && !known.has(argv[i - 1]),
  );
  if (unknown || argv.includes("--help")) {
    process.stderr.write(
      "usage: node tokenizers-r2.mjs [--remote | --local [--persist-to DIR]] [--config FILE]\n" +
        "uploads the bundled tokenizers a Worker reads (tokenizers/<family>/) into the PAYLOADS R2 bucket\n",
    );
    process.exit(unknown ? 2 : 0);
  }
  const where = argv.includes("--local") ? "--local" : "--remote";
  const config = resolve(
    value("--config") ??
      ["wrangler.jsonc", "wrangler.json", "wrangler.toml"].find((f) => existsSync(f)) ??
      "wrangler.jsonc",
  );
  const fromProject = createRequire(join(process.cwd(), "package.json"));
  const wranglerPackage = (() => {
    try {
      return fromProject.resolve("wrangler/package.json");
    } catch {
      return createRequire(import.meta.url).resolve("wrangler/package.json");
    }
  })();
  const { unstable_readConfig } = await import(createRequire(wranglerPackage).resolve("wrangler"));
  const bucket = unstable_readConfig({ config }).r2_buckets?.find((b) => b.binding === "PAYLOADS");
  if (!bucket) {
    process.stderr.write(`no PAYLOADS R2 binding in ${config}\n`);
    process.exit(1);
  }
  const persistTo = value("--persist-to");
  const wrangler = (args) =>
    spawnSync(
      process.execPath,
      [
        join(dirname(wranglerPackage), "bin", "wrangler.js"),
        ...args,
        "--config",
        config,
        ...(where === "--local" && persistTo ? ["--persist-to", resolve(persistTo)] : []),
      ],
      { encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
    );
  try {
    const uploaded = seedWithWrangler(wrangler, bucket.bucket_name, {
      where,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    process.stdout.write(
      uploaded.length > 0
        ? `uploaded tokenizers: ${uploaded.join(", ")}\n`
        : `all bundled tokenizers are already in ${bucket.bucket_name}\n`,
    );
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : error}\n`);
    process.exit(1);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main(process.argv.slice(2));
}
