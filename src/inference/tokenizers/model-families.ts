/**
 * The one registry of model names → bundled tokenizer families (the names of the folders in
 * `bundled/`). Imports nothing, so Worker code, the CLI and the tool-call parsers can all use it.
 */
export const TOKENIZER_FAMILIES = [
  "qwen2_5",
  "qwen3",
  "llama3",
  "llama3_2",
  "gemma3",
  "deepseek_v3",
  "mistral_nemo",
] as const;
export type TokenizerFamily = (typeof TOKENIZER_FAMILIES)[number];

/** Aliases and exact (lower-cased) HF repository names known to use each bundled tokenizer. */
const KNOWN_MODEL_NAMES: Record<string, TokenizerFamily> = {
  "qwen2.5": "qwen2_5",
  "llama3.2": "llama3_2",
  "deepseek-v3": "deepseek_v3",
  "mistral-nemo": "mistral_nemo",
  "qwen/qwen3-0.6b": "qwen3",
  "qwen/qwen3-1.7b": "qwen3",
  "qwen/qwen3-4b": "qwen3",
  "qwen/qwen3-8b": "qwen3",
  "qwen/qwen3-14b": "qwen3",
  "qwen/qwen3-32b": "qwen3",
  "qwen/qwen3-30b-a3b": "qwen3",
  "qwen/qwen3-235b-a22b": "qwen3",
  "qwen/qwen2.5-0.5b-instruct": "qwen2_5",
  "qwen/qwen2.5-1.5b-instruct": "qwen2_5",
  "qwen/qwen2.5-7b-instruct": "qwen2_5",
  "meta-llama/meta-llama-3-8b": "llama3",
  "meta-llama/meta-llama-3-8b-instruct": "llama3",
  "meta-llama/meta-llama-3-70b-instruct": "llama3",
  "meta-llama/llama-3.2-1b-instruct": "llama3_2",
  "meta-llama/llama-3.2-3b-instruct": "llama3_2",
  "google/gemma-3-1b-it": "gemma3",
  "google/gemma-3-4b-it": "gemma3",
  "google/gemma-3-12b-it": "gemma3",
  "google/gemma-3-27b-it": "gemma3",
  "deepseek-ai/deepseek-v3": "deepseek_v3",
  "mistralai/mistral-nemo-instruct-2407": "mistral_nemo",
  // DeepHermes 3 uses the Llama 3 vocabulary and the Llama-Chat prompt format.
  "nousresearch/deephermes-3-llama-3-3b-preview": "llama3",
  "nousresearch/deephermes-3-llama-3-8b-preview": "llama3",
};

/** Family-name patterns for checkpoints not listed above (fine-tunes keep the base vocabulary). */
const NAME_PATTERNS: [RegExp, TokenizerFamily][] = [
  [/(^|[/_-])qwen3([/_.-]|$)/i, "qwen3"],
  [/(^|[/_-])qwen2\.5([/_-]|$)/i, "qwen2_5"],
  [/(^|[/_-])llama-?3\.2([/_-]|$)/i, "llama3_2"],
  // Llama 3.1/3.3 ("llama-3.1") have their own template: not matched on purpose (use a directory).
  [/(^|[/_-])(meta-)?llama-?3([/_-]|$)/i, "llama3"],
  [/(^|[/_-])gemma-?3([/_-]|$)/i, "gemma3"],
  [/(^|[/_-])mistral-nemo([/_-]|$)/i, "mistral_nemo"],
];

/**
 * The bundled tokenizer family of a model name (an HF repository id, an alias or a family name),
 * or null when the name is not known to use one of them. Binding-free: the CLI's tokenizer
 * choice and the tool-call parsers (which format a model family writes) share it.
 */
export function modelTokenizerFamily(name: string): TokenizerFamily | null {
  const key = name.trim().toLowerCase();
  if ((TOKENIZER_FAMILIES as readonly string[]).includes(key)) return key as TokenizerFamily;
  const known = KNOWN_MODEL_NAMES[key];
  if (known) return known;
  for (const [pattern, family] of NAME_PATTERNS) if (pattern.test(key)) return family;
  return null;
}

export function availableTokenizerNames(): string[] {
  return [...TOKENIZER_FAMILIES, ...Object.keys(KNOWN_MODEL_NAMES)];
}

/** The same lookup under the name the tokenizer loader uses (a --tokenizer value). */
export const resolveTokenizerFamily = modelTokenizerFamily;
