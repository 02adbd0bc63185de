/**
 * Builds env instances inside the Worker: inference client, tokenizer and env class from the
 * Worker's env catalog. Instances are cached per isolate so setup() (dataset loading) runs once.
 */

import type { EnvWorkerSpec } from "../core/wire/server-config";
import { SamplingRecord, withSamplingRecord } from "../inference/sampling-record";
import { ServerManager } from "../inference/server-manager";
import { getTokenizer, type R2Reader } from "../inference/tokenizers";
import { isTokenizerNotLoaded, LazyTokenizer } from "../inference/tokenizers/lazy";
import type { Tokenizer } from "../inference/types";
import type { BaseEnv, EnvServices, JsonValue } from "./base-env";
import type { BaseEnvConfig } from "./config";
import type { EnvDefinition } from "./define-env";

export type { EnvWorkerSpec };

const cache = new Map<string, Promise<BaseEnv<JsonValue>>>();

/**
 * The feeder only calls getNextItem() and must not pay for a vocabulary it never touches
 * (a 128–262k vocabulary costs 56–123 MB of heap of an isolate's 128 MB; docs/INFERENCE.md), so
 * its env gets one that refuses use.
 */
export function unloadedTokenizer(name: string): Tokenizer {
  const refuse = (): never => {
    throw new Error(
      `getNextItem() must not tokenize: tokenizer '${name}' is only loaded in rollout workers`,
    );
  };
  return {
    name,
    get eosTokenId() {
      return refuse();
    },
    get bosTokenId() {
      return refuse();
    },
    encode: refuse,
    decode: refuse,
    applyChatTemplate: refuse,
  };
}

/** An env for the feeder: no tokenizer is loaded. */
export async function feederEnv(
  spec: EnvWorkerSpec,
  def: EnvDefinition,
  services: EnvServices = {},
): Promise<BaseEnv<JsonValue>> {
  const inference = new ServerManager(spec.inference);
  const env = def.create(
    def.parseConfig(spec.config),
    inference,
    unloadedTokenizer(String(spec.config.tokenizer_name ?? "qwen3")),
    services,
  );
  await env.setup();
  return env;
}

export interface RolloutEnvOptions {
  /** Loads a tokenizer by name (default: getTokenizer with the bucket); tests count loads. */
  loadTokenizer?: (name: string) => Promise<Tokenizer>;
  /** What the env reaches besides inference and its tokenizer (the Worker's sandbox). */
  services?: EnvServices;
  /** The spec's config as `def.parseConfig` returned it (else it is parsed here). */
  config?: BaseEnvConfig;
}

/**
 * A fully equipped env for rollouts (cached per isolate and spec). Its tokenizer is lazy
 * (tokenizers/lazy.ts): loaded, once per env instance and cached per source, only when a code
 * path needs it, so a rollout whose backend returns token ids never loads one. `bucket`
 * (env.PAYLOADS) lets the tokenizer come from R2: `tokenizers/<family>/` for a bundled name, or
 * an `r2://` name.
 */
export function rolloutEnv(
  spec: EnvWorkerSpec,
  def: EnvDefinition,
  bucket?: R2Reader,
  options: RolloutEnvOptions = {},
): Promise<BaseEnv<JsonValue>> {
  const key = JSON.stringify(spec);
  let env = cache.get(key);
  if (!env) {
    env = (async () => {
      // Parsed once: create() takes the parsed config as it is; the env's `config` is this object.
      const parsed = options.config ?? def.parseConfig(spec.config);
      const load = options.loadTokenizer ?? ((name: string) => getTokenizer(name, { bucket }));
      const tokenizer = new LazyTokenizer(parsed.tokenizer_name, () => load(parsed.tokenizer_name));
      // Backends load the server's tokenizer themselves, only when they need it; the same name
      // shares the env's instance.
      const inference = new ServerManager(spec.inference, {
        getTokenizer: (name) => (name === parsed.tokenizer_name ? tokenizer.load() : load(name)),
      });
      const instance = def.create(parsed, inference, tokenizer, options.services);
      await instance.setup();
      return instance;
    })();
    env.catch(() => cache.delete(key));
    cache.set(key, env);
  }
  return env;
}

/**
 * Runs `attempt` (a rollout or an evaluation of `env`); if it used the env's tokenizer
 * synchronously before anything loaded it, loads the tokenizer and runs it once more. The second
 * run gets the first one's inference answers again instead of sampling anew (sampling-record.ts),
 * so only the env's own code repeats. The env keeps the loaded tokenizer, so this happens at most
 * once per env instance and isolate. `failure` extracts the error from a result that reports
 * failures instead of throwing.
 */
export async function withTokenizerOnDemand<T>(
  env: BaseEnv<JsonValue>,
  attempt: () => Promise<T>,
  failure: (result: T) => unknown = () => undefined,
): Promise<T> {
  const tokenizer = env.tokenizer;
  // Only a tokenizer not loaded yet can make the attempt run again: record answers just then.
  if (!(tokenizer instanceof LazyTokenizer) || tokenizer.isLoaded) return attempt();
  const record = new SamplingRecord();
  const run = () => withSamplingRecord(record, attempt);
  let result: T;
  try {
    result = await run();
  } catch (error) {
    if (!(tokenizer instanceof LazyTokenizer) || !isTokenizerNotLoaded(error)) throw error;
    await tokenizer.load();
    return run();
  }
  if (tokenizer instanceof LazyTokenizer && isTokenizerNotLoaded(failure(result))) {
    await tokenizer.load();
    return run();
  }
  return result;
}
