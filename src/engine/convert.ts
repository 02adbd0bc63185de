/**
 * `atropos-edge engine convert HF_DIR OUT.gguf`: runs the project's HF → GGUF writer
 * (src/engine/python/hf_to_gguf.py, on the `gguf` pip package) in a cached venv made by
 * examples/python/install_venv.sh from requirements-engine.txt.
 */
import { spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { errorMessage } from "../core/errors";

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CONVERTER = join(PACKAGE_ROOT, "src", "engine", "python", "hf_to_gguf.py");

function run(command: string, args: string[], capture: boolean): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      stdio: ["ignore", capture ? "pipe" : "inherit", "inherit"],
    });
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolvePromise(out.trim())
        : reject(new Error(`${command} exited with code ${code}`)),
    );
  });
}

/** The venv's python (made once: CPU torch, transformers, gguf; ~1.2 GB, ~1 minute). */
export async function engineVenvPython(log: (line: string) => void = () => {}): Promise<string> {
  log("preparing the converter's Python venv (once; pip's configured index)");
  try {
    return await run(
      "bash",
      [
        join(PACKAGE_ROOT, "examples", "python", "install_venv.sh"),
        "engine",
        "gguf, safetensors, torch",
      ],
      true,
    );
  } catch (error) {
    throw new Error(
      `the converter needs Python 3 with venv and pip (${errorMessage(error)}); ` +
        `or run it in your own environment: pip install -r examples/python/requirements-engine.txt && python ${CONVERTER} HF_DIR OUT.gguf`,
    );
  }
}

export async function convertCheckpoint(
  hfDir: string,
  out: string,
  options: { dtype?: "f32" | "f16"; log?: (line: string) => void } = {},
): Promise<void> {
  const python = await engineVenvPython(options.log);
  await run(
    python,
    [CONVERTER, resolve(hfDir), resolve(out), "--dtype", options.dtype ?? "f32"],
    false,
  );
}
