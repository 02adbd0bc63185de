/**
 * `atropos-edge engine --model PATH.gguf` (a real model on llama.cpp, speaking the wire formats
 * of vLLM, SGLang, TRL and Atropos' server) and `atropos-edge engine convert HF_DIR OUT.gguf`.
 * docs/INFERENCE.md, "Real models on your machine".
 */
import type { Command } from "commander";
import { errorMessage } from "../core/errors";

function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`${name} must be a positive integer, got ${value}`);
    return n;
  };
}

export function registerEngineCommand(program: Command): void {
  const engine = program
    .command("engine")
    .description("serve a GGUF model on llama.cpp (CPU) for envs, start, the proxy and trainers")
    .option("--model <path>", "the .gguf file to serve")
    .option("--port <port>", "listen port", positiveInt("--port"), 8000)
    .option("--host <host>", "listen address", "127.0.0.1")
    .option("--ctx <tokens>", "context per sequence (prompt + completion)", positiveInt("--ctx"))
    .option("--parallel <n>", "sequences generated at once", positiveInt("--parallel"), 4)
    .option("--threads <n>", "CPU threads (default: half the cores)", positiveInt("--threads"))
    .option("--name <model>", "model name served (default: the file name)")
    .action(
      async (o: {
        model?: string;
        port: number;
        host: string;
        ctx?: number;
        parallel: number;
        threads?: number;
        name?: string;
      }) => {
        if (!o.model) {
          console.error(
            "engine: give --model PATH.gguf (see `atropos-edge engine convert` to make one)",
          );
          process.exitCode = 2;
          return;
        }
        const { startEngine } = await import("../engine/index");
        const started = performance.now();
        const server = await startEngine({
          model: o.model,
          port: o.port,
          host: o.host,
          ctx: o.ctx,
          parallel: o.parallel,
          threads: o.threads,
          modelName: o.name,
        });
        const t = server.model.tokenizer;
        console.log(
          `engine: ${o.model} (vocab ${t.vocabSize}, context ${server.model.contextSize}, ` +
            `${(server.model.sizeBytes / 1e6).toFixed(1)} MB) loaded in ${((performance.now() - started) / 1000).toFixed(1)} s\n` +
            `engine: listening on ${server.url} — --server-type vllm --inference-url ${server.url}/v1; Ctrl-C stops`,
        );
        await new Promise<void>((resolve) => {
          process.once("SIGINT", resolve);
          process.once("SIGTERM", resolve);
        });
        await server.close();
      },
    );

  engine
    .command("convert <hfDir> <out>")
    .description("write a Hugging Face checkpoint (Qwen2, Qwen3, Llama) as a GGUF file")
    .option("--dtype <type>", "f32 (exact logprobs) or f16", "f32")
    .action(async (hfDir: string, out: string, o: { dtype: string }) => {
      if (o.dtype !== "f32" && o.dtype !== "f16") {
        console.error(`engine convert: --dtype ${o.dtype}: use f32 or f16`);
        process.exitCode = 2;
        return;
      }
      const { convertCheckpoint } = await import("../engine/convert");
      try {
        await convertCheckpoint(hfDir, out, {
          dtype: o.dtype,
          log: (line) => console.error(`engine convert: ${line}`),
        });
      } catch (error) {
        console.error(`engine convert: ${errorMessage(error)}`);
        process.exitCode = 2;
      }
    });
}
