/**
 * `atropos-edge inference set|show --api URL --run RUN` (docs/PROXY.md): a run's inference
 * servers, which the inference proxy forwards to. Keys come from a file or an environment
 * variable (never a flag, which would land in shell history) and are never printed.
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import type { RunInference } from "../core/wire/api-schemas";
import {
  type APIServerConfigInput,
  isServerType,
  serverTypeError,
} from "../core/wire/server-config";
import {
  adminClientOf,
  type ConnectionOptions,
  connectionFrom,
  withConnectionOptions,
} from "./run-control";

export interface InferenceSetOptions {
  run: string;
  /** A JSON file: a list of server configs (the shape POST /v1/runs/{run}/env-workers takes). */
  file?: string;
  baseUrl?: string;
  serverType?: string;
  model?: string;
  tokenizer?: string;
  /** The name of an environment variable holding the servers' API key. */
  apiKeyEnv?: string;
  env?: Record<string, string | undefined>;
}

/** One line per server; the key shown only as whether there is one. */
export function formatInference(inference: RunInference): string {
  if (inference.servers.length === 0) return `run ${inference.run}: no inference servers`;
  return [
    `run ${inference.run}: ${inference.servers.length} inference server${inference.servers.length === 1 ? "" : "s"}`,
    ...inference.servers.map(
      (s) =>
        `  ${s.server_type}  ${s.base_url}  model ${s.model_name}  ${s.has_api_key ? "api key set" : "no api key"}`,
    ),
  ].join("\n");
}

export function serversFromOptions(set: InferenceSetOptions): APIServerConfigInput[] {
  const env = set.env ?? process.env;
  const key = set.apiKeyEnv ? env[set.apiKeyEnv] : undefined;
  if (set.apiKeyEnv && !key)
    throw new Error(`--api-key-env ${set.apiKeyEnv}: that variable is not set`);
  if (set.file) {
    if (set.baseUrl) throw new Error("give --file or --base-url, not both");
    const servers = JSON.parse(readFileSync(set.file, "utf8")) as unknown;
    if (!Array.isArray(servers)) throw new Error(`${set.file}: expected a JSON list of servers`);
    return servers.map((s: APIServerConfigInput) => (key ? { ...s, api_key: key } : s));
  }
  if (!set.baseUrl) throw new Error("give --base-url <url> (or --file servers.json)");
  const serverType = set.serverType ?? "vllm";
  if (!isServerType(serverType)) throw serverTypeError(serverType);
  return [
    {
      base_url: set.baseUrl,
      server_type: serverType,
      ...(set.model ? { model_name: set.model } : {}),
      ...(set.tokenizer ? { tokenizer_name: set.tokenizer } : {}),
      ...(key ? { api_key: key } : {}),
    },
  ];
}

export async function runInferenceSet(
  options: ConnectionOptions,
  set: InferenceSetOptions,
): Promise<string> {
  return formatInference(
    await adminClientOf(options).setInference(set.run, serversFromOptions(set)),
  );
}

export async function runInferenceShow(
  options: ConnectionOptions,
  run: string,
  json = false,
): Promise<string> {
  const inference = await adminClientOf(options).getInference(run);
  return json ? JSON.stringify(inference, null, 2) : formatInference(inference);
}

export function registerInferenceServersCommand(program: Command): void {
  const inference = program
    .command("inference")
    .description("set or show a run's inference servers (used by the inference proxy)");
  const common = (c: Command) =>
    withConnectionOptions(c, "admin").option("--run <run>", "the run", "default");
  common(inference.command("set").description("replace the run's inference servers"))
    .option("--file <servers.json>", "a JSON list of server configs")
    .option("--base-url <url>", "one server's OpenAI base URL, e.g. http://gpu:8000/v1")
    .option("--server-type <type>", "the server's type (the proxy needs vllm)", "vllm")
    .option("--model <name>", "model name")
    .option("--tokenizer <name>", "tokenizer name")
    .option("--api-key-env <VAR>", "environment variable holding the servers' API key")
    .action(async (o: InferenceSetOptions & { api?: string; token?: string }) => {
      console.log(await runInferenceSet(connectionFrom(o), o));
    });
  common(inference.command("show").description("show the run's servers (never their keys)"))
    .option("--json", "print JSON")
    .action(async (o: { api?: string; token?: string; run: string; json?: boolean }) => {
      console.log(await runInferenceShow(connectionFrom(o), o.run, o.json === true));
    });
}
