/**
 * Builds env instances inside the Worker: inference client, tokenizer and env class from the
 * Worker's env catalog. Instances are cached per isolate so setup() (dataset loading) runs once.
 */

import type { EnvWorkerSpec } from "../core/server-config";
import type { BaseEnv, JsonValue } from "./base-env";
import type { EnvDefinition } from "./define-env";
import { ServerManager } from "./inference/server-manager";
import type { Tokenizer } from "./inference/types";
import { getTokenizer, type R2Reader } from "./tokenizers";

export type { EnvWorkerSpec };

const cache = new Map<string, Promise<BaseEnv<JsonValue>>>();

/**
 * The feeder only calls getNextItem() and must not pay for a vocabulary it never touches
 * (a tokenizer costs 86-114 MB of an isolate's 128 MB), so its env gets one that refuses use.
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
): Promise<BaseEnv<JsonValue>> {
  const inference = new ServerManager(spec.inference);
  const env = def.create(
    spec.config,
    inference,
    unloadedTokenizer(String(spec.config.tokenizer_name ?? "qwen3")),
  );
  await env.setup();
  return env;
}

/**
 * A fully equipped env for rollouts (cached per isolate and spec). `bucket` (env.PAYLOADS) lets
 * the tokenizer come from R2: `tokenizers/<family>/` for a bundled name, or an `r2://` name.
 */
export function rolloutEnv(
  spec: EnvWorkerSpec,
  def: EnvDefinition,
  bucket?: R2Reader,
): Promise<BaseEnv<JsonValue>> {
  const key = JSON.stringify(spec);
  let env = cache.get(key);
  if (!env) {
    env = (async () => {
      const parsed = def.configSchema.parse(spec.config);
      const load = (name: string) => getTokenizer(name, { bucket });
      const tokenizer = await load(parsed.tokenizer_name);
      const inference = new ServerManager(spec.inference, { getTokenizer: load });
      const instance = def.create(spec.config, inference, tokenizer);
      await instance.setup();
      return instance;
    })();
    env.catch(() => cache.delete(key));
    cache.set(key, env);
  }
  return env;
}
