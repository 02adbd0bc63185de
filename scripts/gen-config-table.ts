/**
 * Regenerates the Atropos field table in docs/CONFIG.md from src/cli/atropos-fields.ts.
 * Run: npx tsx scripts/gen-config-table.ts (a unit test fails while the two disagree).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { withGeneratedTable } from "../src/cli/atropos-fields";

const path = join(dirname(fileURLToPath(import.meta.url)), "..", "docs", "CONFIG.md");
writeFileSync(path, withGeneratedTable(readFileSync(path, "utf8")));
console.log(`updated ${path}`);
