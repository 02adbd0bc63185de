/**
 * The llama.cpp engine: installs node-llama-cpp on first use (llama-install.ts), loads a GGUF and
 * serves it (server.ts). `llamaFor` keeps one llama.cpp runtime per process.
 */

import type { Llama } from "./llama-api";
import { loadLlamaModule } from "./llama-install";
import { type EngineServer, type EngineServerOptions, startEngineServer } from "./server";

export { engineDir, ensureLlamaEngine, NODE_LLAMA_CPP_VERSION } from "./llama-install";
export type { EngineServer, EngineServerOptions, EngineStats } from "./server";

let llama: Promise<Llama> | null = null;

/** The process's llama.cpp runtime (CPU; installed and loaded on first call). */
export function llamaRuntime(log?: (line: string) => void): Promise<Llama> {
  llama ??= loadLlamaModule({ log }).then((module) =>
    module.getLlama({ gpu: false, build: "never", logLevel: "error", progressLogs: false }),
  );
  return llama;
}

/** Frees the llama.cpp runtime (its native threads keep a process alive otherwise). */
export async function closeLlamaRuntime(): Promise<void> {
  const pending = llama;
  llama = null;
  if (pending) await (await pending).dispose();
}

/** Serves the GGUF at `options.model` until close(). */
export async function startEngine(
  options: EngineServerOptions & { log?: (line: string) => void },
): Promise<EngineServer> {
  return startEngineServer(await llamaRuntime(options.log), options);
}
