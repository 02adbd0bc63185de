/**
 * Which tokenizer a command uses for `--model` / `--tokenizer`. A tokenizer that does not match
 * the model gives wrong token ids silently (the masks and logprobs a trainer gets are garbage),
 * so nothing is guessed: a known model name selects its bundled family, an unknown one needs
 * `--tokenizer`, and a tokenizer of another family is refused unless `--force-tokenizer`.
 */
import { modelTokenizerFamily, TOKENIZER_FAMILIES } from "../inference/tokenizers/model-families";

/** The simulator's model name (the default --model): it speaks any tokenizer, qwen3 by default. */
export const SIMULATED_MODEL = "sim-policy";
export const DEFAULT_SIM_TOKENIZER = "qwen3";

export interface TokenizerChoiceInput {
  model: string;
  /** --tokenizer (or its env var / config field); undefined when not given. */
  tokenizer?: string;
  /** --force-tokenizer: use --tokenizer even when the model's family differs. */
  force?: boolean;
}

/** The tokenizer to load, or an Error saying what to pass. */
export function chooseTokenizer({ model, tokenizer, force }: TokenizerChoiceInput): string {
  const given = tokenizer?.trim() || undefined;
  if (model === SIMULATED_MODEL) return given ?? DEFAULT_SIM_TOKENIZER;
  const family = modelTokenizerFamily(model);
  if (given === undefined) {
    if (family) return family;
    throw new Error(
      `--model ${model}: not a model whose tokenizer this package knows, so it will not guess one. Pass --tokenizer: a bundled family (${TOKENIZER_FAMILIES.join(", ")}), a directory holding the model's tokenizer.json and tokenizer_config.json, or its Hugging Face id (e.g. --tokenizer ${model}, downloaded once)`,
    );
  }
  const givenFamily = modelTokenizerFamily(given);
  if (family && givenFamily && givenFamily !== family && !force) {
    throw new Error(
      `--model ${model} uses the ${family} tokenizer, but --tokenizer ${given} is ${givenFamily}: leave --tokenizer out (or pass --tokenizer ${family}), or add --force-tokenizer to use ${given} anyway`,
    );
  }
  return given;
}
