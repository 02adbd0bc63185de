#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's loader, so no build step is needed.
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { register } from "tsx/esm/api";

register();
process.env.ATROPOS_EDGE_BIN = "1";
const main = join(dirname(fileURLToPath(import.meta.url)), "..", "src", "cli", "main.ts");
await import(pathToFileURL(main).href);
