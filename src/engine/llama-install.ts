/**
 * Installs node-llama-cpp on first use into a folder of its own and imports it from there.
 *
 * Not a dependency of the project: `npm i node-llama-cpp` pulls every prebuilt llama.cpp variant
 * as optional dependencies (CUDA, Vulkan, ARM: ~730 MB), which every `npm ci` of this project
 * would then download. Here only the package and the one prebuilt binary for this platform are
 * installed (~85 MB), with `--omit=optional` scoped to that folder, so the project's own install
 * (where workerd's binary is an optional dependency) is never touched.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { errorMessage } from "../core/errors";
import type { LlamaModule } from "./llama-api";

export const NODE_LLAMA_CPP_VERSION = "3.21.1";

/** node-llama-cpp's prebuilt CPU (or Metal) package per platform (its optionalDependencies). */
const PREBUILT: Record<string, string> = {
  "linux-x64": "@node-llama-cpp/linux-x64",
  "linux-arm64": "@node-llama-cpp/linux-arm64",
  "linux-arm": "@node-llama-cpp/linux-armv7l",
  "darwin-arm64": "@node-llama-cpp/mac-arm64-metal",
  "darwin-x64": "@node-llama-cpp/mac-x64",
  "win32-x64": "@node-llama-cpp/win-x64",
  "win32-arm64": "@node-llama-cpp/win-arm64",
};

export function prebuiltPackage(
  platform: string = process.platform,
  arch: string = process.arch,
): string {
  const name = PREBUILT[`${platform}-${arch}`];
  if (!name) {
    throw new Error(
      `the llama.cpp engine has no prebuilt binary for ${platform}-${arch} (node-llama-cpp ` +
        `${NODE_LLAMA_CPP_VERSION} ships ${Object.keys(PREBUILT).join(", ")}); use the ` +
        "simulator, or a vLLM/SGLang server elsewhere (docs/INFERENCE.md)",
    );
  }
  return name;
}

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Where the engine lives: $ATROPOS_EDGE_ENGINE_DIR, else node_modules/.cache/llama-engine. */
export function engineDir(): string {
  return (
    process.env.ATROPOS_EDGE_ENGINE_DIR ??
    join(PACKAGE_ROOT, "node_modules", ".cache", "llama-engine")
  );
}

function installedVersion(dir: string, name: string): string | null {
  try {
    const file = join(dir, "node_modules", name, "package.json");
    return (JSON.parse(readFileSync(file, "utf8")) as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

function isInstalled(dir: string, prebuilt: string): boolean {
  return (
    installedVersion(dir, "node-llama-cpp") === NODE_LLAMA_CPP_VERSION &&
    installedVersion(dir, prebuilt) === NODE_LLAMA_CPP_VERSION
  );
}

function runNpm(dir: string, log: (line: string) => void): Promise<void> {
  const args = ["install", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund"];
  log(`npm ${args.join(" ")} (in ${dir})`);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.platform === "win32" ? "npm.cmd" : "npm", args, {
      cwd: dir,
      // npm's own progress goes to the terminal; nothing is read from it.
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.on("error", (error) =>
      reject(new Error(`could not run npm (${error.message}): npm comes with Node.js`)),
    );
    child.on("exit", (code) =>
      code === 0 ? resolvePromise() : reject(new Error(`npm install exited with code ${code}`)),
    );
  });
}

/**
 * Makes sure node-llama-cpp and this platform's prebuilt llama.cpp are in `dir` (installing them
 * from the npm registry the first time, with progress on `log`); returns the import path.
 */
export async function ensureLlamaEngine(
  options: { dir?: string; log?: (line: string) => void } = {},
): Promise<string> {
  const dir = options.dir ?? engineDir();
  const log = options.log ?? ((line: string) => process.stderr.write(`engine: ${line}\n`));
  const prebuilt = prebuiltPackage();
  const entry = join(dir, "node_modules", "node-llama-cpp", "dist", "index.js");
  if (isInstalled(dir, prebuilt)) return entry;
  mkdirSync(dir, { recursive: true });
  const lock = join(dir, ".install-lock");
  await acquireLock(lock, log);
  try {
    if (isInstalled(dir, prebuilt)) return entry; // another process installed it meanwhile
    log(
      `installing node-llama-cpp ${NODE_LLAMA_CPP_VERSION} + ${prebuilt} (~85 MB, once) from ` +
        "the npm registry",
    );
    const manifest = {
      name: "atropos-edge-llama-engine",
      private: true,
      description: "The llama.cpp engine of atropos-edge, installed on first use (src/engine)",
      dependencies: {
        "node-llama-cpp": NODE_LLAMA_CPP_VERSION,
        [prebuilt]: NODE_LLAMA_CPP_VERSION,
      },
    };
    writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    try {
      await runNpm(dir, log);
    } catch (error) {
      const why = errorMessage(error);
      throw new Error(
        `the llama.cpp engine could not be installed (${why}). It needs the npm registry once; ` +
          `or install by hand: cd ${dir} && npm install --omit=optional --ignore-scripts`,
      );
    }
    if (!isInstalled(dir, prebuilt)) {
      throw new Error(`npm finished but ${dir} has no node-llama-cpp ${NODE_LLAMA_CPP_VERSION}`);
    }
    log("installed");
    return entry;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** A directory as a lock between processes (tests install once), broken after 10 minutes. */
async function acquireLock(lock: string, log: (line: string) => void): Promise<void> {
  const deadline = Date.now() + 10 * 60_000;
  let told = false;
  for (;;) {
    try {
      mkdirSync(lock);
      return;
    } catch {
      if (Date.now() > deadline) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (!told) log("another process is installing the engine; waiting");
      told = true;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Installs if needed and imports node-llama-cpp. */
export async function loadLlamaModule(
  options: { dir?: string; log?: (line: string) => void } = {},
): Promise<LlamaModule> {
  const entry = await ensureLlamaEngine(options);
  if (!existsSync(entry))
    throw new Error(`${entry} is missing: remove ${dirname(entry)} and retry`);
  return (await import(pathToFileURL(entry).href)) as LlamaModule;
}
