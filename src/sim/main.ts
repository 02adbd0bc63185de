/** `tsx src/sim/main.ts --port 9001 [--tokenizer qwen3] [--seed 0] ...` — prints the URL. */
import { parseArgs } from "node:util";
import { startSimulator } from "./server";

const { values } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "9001" },
    tokenizer: { type: "string", default: "qwen3" },
    model: { type: "string", default: "sim-policy" },
    seed: { type: "string", default: "0" },
    "latency-ms": { type: "string", default: "0" },
    "latency-jitter-ms": { type: "string", default: "0" },
    "correct-probability": { type: "string", default: "0.5" },
    "max-tokens-default": { type: "string", default: "256" },
    "error-rate": { type: "string", default: "0" },
    "timeout-rate": { type: "string", default: "0" },
    "truncate-rate": { type: "string", default: "0" },
    "slow-rate": { type: "string", default: "0" },
  },
});

const num = (key: keyof typeof values): number => {
  const value = Number(values[key]);
  if (!Number.isFinite(value)) throw new Error(`--${key} must be a number`);
  return value;
};

const sim = await startSimulator({
  host: values.host,
  port: num("port"),
  tokenizer: values.tokenizer,
  model: values.model,
  seed: num("seed"),
  latencyMs: num("latency-ms"),
  latencyJitterMs: num("latency-jitter-ms"),
  correctProbability: num("correct-probability"),
  maxTokensDefault: num("max-tokens-default"),
  faults: {
    errorRate: num("error-rate"),
    timeoutRate: num("timeout-rate"),
    truncateRate: num("truncate-rate"),
    slowRate: num("slow-rate"),
  },
});
console.log(`inference simulator (test double) listening on ${sim.url}`);
const stop = () => void sim.close().then(() => process.exit(0));
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
