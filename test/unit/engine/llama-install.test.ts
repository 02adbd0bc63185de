/** The engine's first-use install: which prebuilt package, and no npm run once it is there. */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ensureLlamaEngine,
  NODE_LLAMA_CPP_VERSION,
  prebuiltPackage,
} from "../../../src/engine/llama-install";

describe("llama engine install", () => {
  it("picks only this platform's prebuilt llama.cpp, and names what is missing elsewhere", () => {
    expect(prebuiltPackage("linux", "x64")).toBe("@node-llama-cpp/linux-x64");
    expect(prebuiltPackage("darwin", "arm64")).toBe("@node-llama-cpp/mac-arm64-metal");
    expect(() => prebuiltPackage("aix", "ppc64")).toThrow(
      /no prebuilt binary for aix-ppc64 \(node-llama-cpp 3\.21\.1 ships linux-x64, .*\); use the simulator/,
    );
  });

  it("an installed folder is used as it is (no npm run, nothing logged)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "llama-engine-"));
    for (const name of ["node-llama-cpp", prebuiltPackage()]) {
      mkdirSync(join(dir, "node_modules", name), { recursive: true });
      writeFileSync(
        join(dir, "node_modules", name, "package.json"),
        JSON.stringify({ name, version: NODE_LLAMA_CPP_VERSION }),
      );
    }
    const logged: string[] = [];
    const entry = await ensureLlamaEngine({ dir, log: (line) => logged.push(line) });
    expect(entry).toBe(join(dir, "node_modules", "node-llama-cpp", "dist", "index.js"));
    expect(logged).toEqual([]);
  });
});
