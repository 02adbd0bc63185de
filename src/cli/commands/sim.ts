/** `atropos-edge sim`: the inference simulator on a port until Ctrl-C. */
import type { Command } from "commander";
import { type AddOptions, opt } from "./options";

export function registerSimCommand(program: Command, options: AddOptions): void {
  options(
    program.command("sim").description("run the inference simulator (a test double, not a model)"),
    [
      opt("--port <port>", "port", "listen port", 9001),
      opt("--host <host>", "host", "listen address", "127.0.0.1"),
      opt("--tokenizer <name>", "tokenizer", "tokenizer short name", "qwen3"),
      opt("--model <name>", "model", "model name reported", "sim-policy"),
      opt("--seed <n>", "seed", "seed for deterministic outputs", 0),
      opt("--latency-ms <ms>", "latencyMs", "latency per request", 0),
      opt("--latency-jitter-ms <ms>", "latencyJitterMs", "random extra latency", 0),
      opt("--correct-probability <p>", "correctProbability", "chance an answer is correct", 0.5),
      opt("--error-rate <p>", "errorRate", "fraction of requests answered 500", 0),
      opt("--timeout-rate <p>", "timeoutRate", "fraction of requests that hang", 0),
    ],
    async (o) => {
      const { startSimulator } = await import("../../sim/server");
      const sim = await startSimulator({
        host: String(o.host),
        port: Number(o.port),
        tokenizer: String(o.tokenizer),
        model: String(o.model),
        seed: Number(o.seed),
        latencyMs: Number(o.latencyMs),
        latencyJitterMs: Number(o.latencyJitterMs),
        correctProbability: Number(o.correctProbability),
        faults: { errorRate: Number(o.errorRate), timeoutRate: Number(o.timeoutRate) },
      });
      console.log(
        `inference simulator (test double) on ${sim.url} — use --inference-url ${sim.url}/v1; Ctrl-C stops`,
      );
      await new Promise<void>((resolve) => {
        process.once("SIGINT", resolve);
        process.once("SIGTERM", resolve);
      });
      await sim.close();
      return 0;
    },
  );
}
