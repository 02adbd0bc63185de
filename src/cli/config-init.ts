/**
 * Atropos' `config_init`: an env class may declare its default config and inference servers
 * (`static configInit()`, EnvDefinition.configInit). They are the lowest layer, as in Atropos
 * (CLI > YAML > config_init): config files, `--env.*` / `--openai.*` and the other flags win.
 */
import type { EnvDefinition } from "../env-sdk/define-env";
import type { InferenceFlags } from "./inference";

/** The env config: the env's config_init fields under what the user configured. */
export function withInitConfig(
  def: EnvDefinition,
  config: Record<string, unknown>,
): Record<string, unknown> {
  return { ...(def.configInit?.().env ?? {}), ...config };
}

/** Server fields that are CLI options (the same mapping as `openai:` in atropos-fields.ts). */
const SERVER_OPTIONS: Record<string, keyof InferenceFlags> = {
  base_url: "inferenceUrl",
  server_type: "serverType",
  model_name: "model",
  api_key: "apiKey",
  tokenizer_name: "tokenizer",
};

/**
 * The inference flags over the env's config_init servers. As in Atropos, a single `openai:`
 * server is merged over a single declared one, and a list replaces them; each option the user
 * did not set (`userSet`, by option key) comes from the first declared server.
 */
export function withInitServers(
  def: EnvDefinition,
  flags: InferenceFlags,
  userSet: (optionKey: string) => boolean,
): InferenceFlags {
  const init = def.configInit?.().servers ?? [];
  const user = flags.servers ?? [];
  if (init.length === 0 || user.length > 1 || (user.length === 1 && init.length > 1)) return flags;
  const first = init[0]!;
  const servers = user.length === 1 ? [{ ...first, ...user[0] }] : init;
  const out: InferenceFlags = { ...flags, servers };
  for (const [field, key] of Object.entries(SERVER_OPTIONS)) {
    const value = first[field];
    if (userSet(key) || value === undefined || value === null || value === "") continue;
    if (field === "tokenizer_name" && value === "none") continue;
    (out as unknown as Record<string, unknown>)[key] = String(value);
  }
  return out;
}
