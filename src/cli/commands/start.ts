/** `atropos-edge start`: the whole loop locally (API, simulator, envs, demo trainer); runs start.ts. */
import { resolve } from "node:path";
import type { Command } from "commander";
import { isEnvPath } from "../env-loader";
import { type AddOptions, ENV_HELP, INFERENCE, inferenceFlags, opt, str } from "./options";

export const DEFAULT_START_ENVS = "gsm8k_lite,letter_counting";

/** `start`'s envs: `--env X` is a one-item `--envs X`; giving both is ambiguous, so an error. */
export function startEnvEntries(env: string | undefined, envs: string | undefined): string[] {
  if (env !== undefined && envs !== undefined) {
    throw new Error("give --env (one env) or --envs (a list), not both");
  }
  if (env !== undefined) return [env];
  return (envs ?? DEFAULT_START_ENVS)
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

export function registerStartCommand(program: Command, options: AddOptions): void {
  options(
    program
      .command("start")
      .description(
        "run the whole loop locally: API (local Worker), simulator, example envs, demo trainer",
      ),
    [
      opt("--steps <n>", "steps", "trainer steps before stopping", 20),
      opt("--port <port>", "port", "port of the local API", 8787),
      opt(
        "--env <name|path>",
        "env",
        `one env: ${ENV_HELP} (same as --envs with one item)`,
        undefined,
      ),
      opt(
        "--envs <list>",
        "envs",
        `comma-separated env names or paths to env modules (default: ${DEFAULT_START_ENVS})`,
        undefined,
      ),
      opt("--batch-size <n>", "batchSize", "trainer batch size in sequences", 32),
      opt("--max-token-len <n>", "maxTokenLen", "trainer max token length", 2048),
      opt(
        "--persist-to <dir>",
        "persistTo",
        "keep API state in this dir; default: fresh dir under .wrangler/, removed at exit",
        undefined,
      ),
      opt("--lease-seconds <s>", "leaseSeconds", "lease duration for each batch", 60),
      opt(
        "--workers",
        "workers",
        "run the envs on the Worker's queue path (EnvFeeder DOs + queue consumers) instead of in Node",
        false,
      ),
      opt(
        "--max-seconds <s>",
        "maxSeconds",
        "fail if the steps are not done in this time (0 = never)",
        0,
      ),
      opt(
        "--learning-rate <lr>",
        "learningRate",
        "step size of the simulator's toy policy updates (0 = weights never move)",
        0.3,
      ),
      opt(
        "--summary-json <file>",
        "summaryJson",
        "write the per-step learning curve as JSON",
        undefined,
      ),
      opt(
        "--max-failure-rate <share>",
        "maxFailureRate",
        "fail the run when more than this share of an env's items fail with an error",
        0.1,
      ),
      opt(
        "--allow-failures",
        "allowFailures",
        "succeed however many items fail (the summary still counts them)",
        false,
      ),
      ...INFERENCE,
    ],
    async (o, _args, env) => {
      const { runStart } = await import("../start");
      const { parseFailureRate } = await import("../failure-account");
      const entries = startEnvEntries(str(o.env), str(o.envs));
      const loaded = await env.loadEnvs(entries);
      return runStart({
        ...inferenceFlags(o, env, loaded[0]?.def),
        envDefinitions: loaded.map((l) => l.def),
        envModules: entries.map((e) => (isEnvPath(e) ? resolve(e) : null)),
        envConfigs: loaded.map((l) => l.config),
        steps: Number(o.steps),
        port: Number(o.port),
        envs: entries.join(","),
        batchSize: Number(o.batchSize),
        maxTokenLen: Number(o.maxTokenLen),
        persistTo: str(o.persistTo),
        leaseSeconds: Number(o.leaseSeconds),
        maxSeconds: Number(o.maxSeconds),
        workers: Boolean(o.workers),
        learningRate: Number(o.learningRate),
        summaryJson: str(o.summaryJson),
        maxFailureRate: parseFailureRate(o.maxFailureRate),
        allowFailures: Boolean(o.allowFailures),
      });
    },
  );
}
