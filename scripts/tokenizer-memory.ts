/**
 * Heap and load time of each bundled tokenizer, one fresh Node process per family:
 *
 *   npx tsx scripts/tokenizer-memory.ts [family ...]
 *
 * Prints a Markdown table for docs/INFERENCE.md. "heap" is V8 heap retained after GC with the
 * tokenizer (and its parsed tokenizer.json) alive: what the tokenizer costs inside a 128 MB isolate.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { TOKENIZER_FAMILIES } from "../src/inference/tokenizers/registry";

const root = path.resolve(import.meta.dirname, "..");

const PROBE = `
const { getTokenizer } = await import(${JSON.stringify(path.join(root, "src/inference/tokenizers/index.ts"))});
const family = process.argv.at(-1);
gc(); gc();
const before = process.memoryUsage();
const start = performance.now();
const tok = await getTokenizer(family);
const loadMs = performance.now() - start;
gc(); gc();
const after = process.memoryUsage();
const text = "The quick brown fox jumps over the lazy dog. 数学 🙂 ".repeat(2000);
let t = performance.now();
const ids = tok.encode(text, { addSpecialTokens: false });
const encodeMs = performance.now() - t;
t = performance.now();
tok.decode(ids);
const decodeMs = performance.now() - t;
console.log(JSON.stringify({
  heapMB: (after.heapUsed - before.heapUsed) / 2 ** 20,
  rssMB: (after.rss - before.rss) / 2 ** 20,
  loadMs, tokens: ids.length, encodeMs, decodeMs, vocab: tok.specialTokenIds.size,
}));
`;

const families = process.argv.length > 2 ? process.argv.slice(2) : [...TOKENIZER_FAMILIES];
console.log("| family | load | heap after GC | RSS delta | encode | decode |");
console.log("| ------ | ---- | ------------- | --------- | ------ | ------ |");
for (const family of families) {
  const out = execFileSync(
    process.execPath,
    ["--expose-gc", "--import", "tsx", "--input-type=module", "-e", PROBE, family],
    { cwd: root, encoding: "utf8" },
  );
  const r = JSON.parse(out.trim().split("\n").pop() as string);
  const rate = (ms: number) => `${(r.tokens / ms / 1000).toFixed(2)} M tok/s`;
  console.log(
    `| ${family} | ${(r.loadMs / 1000).toFixed(1)} s | **${r.heapMB.toFixed(0)} MB** | ${r.rssMB.toFixed(0)} MB | ${rate(r.encodeMs)} | ${rate(r.decodeMs)} |`,
  );
}
