/**
 * A tokenizer that is loaded only when a code path needs it. In a Worker a 128–152k vocabulary
 * costs 56–123 MB of a 128 MB isolate, and a rollout whose backend returns token ids never needs
 * one; the env still gets a `Tokenizer` so env code does not change.
 *
 * Tokenizer methods are synchronous, so an unloaded one cannot load on first use: async paths
 * that know they need it (the ManagedServer, send validation with include_messages) await
 * `loadTokenizer()` first, and a synchronous call before that throws TokenizerNotLoadedError,
 * which the rollout worker answers by loading it and running the item again (see worker-env.ts).
 */
import type { ChatMessage } from "../../core/wire/group-types";
import type { ApplyChatTemplateOptions, Tokenizer } from "../types";

export class TokenizerNotLoadedError extends Error {
  override name = "TokenizerNotLoadedError";
}

export class LazyTokenizer implements Tokenizer {
  private loaded: Tokenizer | null = null;
  private pending: Promise<Tokenizer> | null = null;

  constructor(
    readonly name: string,
    private readonly loader: () => Promise<Tokenizer>,
  ) {}

  get isLoaded(): boolean {
    return this.loaded !== null;
  }

  /** Loads once (a failed load is tried again on the next call). */
  load(): Promise<Tokenizer> {
    if (this.loaded) return Promise.resolve(this.loaded);
    if (!this.pending) {
      this.pending = this.loader().then(
        (tokenizer) => {
          this.loaded = tokenizer;
          return tokenizer;
        },
        (error: unknown) => {
          this.pending = null;
          throw error;
        },
      );
    }
    return this.pending;
  }

  private get ready(): Tokenizer {
    if (this.loaded) return this.loaded;
    throw new TokenizerNotLoadedError(
      `tokenizer ${this.name} is not loaded yet: await loadTokenizer(tokenizer) before using it synchronously`,
    );
  }

  get eosTokenId(): number {
    return this.ready.eosTokenId;
  }

  get bosTokenId(): number | null {
    return this.ready.bosTokenId;
  }

  get stopTokenIds(): readonly number[] | undefined {
    return this.ready.stopTokenIds;
  }

  get specialTokenIds(): ReadonlySet<number> | undefined {
    return this.ready.specialTokenIds;
  }

  encode(text: string, options?: { addSpecialTokens?: boolean }): number[] {
    return this.ready.encode(text, options);
  }

  decode(ids: number[], options?: { skipSpecialTokens?: boolean }): string {
    return this.ready.decode(ids, options);
  }

  applyChatTemplate(messages: ChatMessage[], options?: ApplyChatTemplateOptions): string {
    return this.ready.applyChatTemplate(messages, options);
  }
}

/** The usable tokenizer behind `tokenizer` (loads a lazy one; any other is returned as is). */
export function loadTokenizer(tokenizer: Tokenizer): Promise<Tokenizer> {
  return tokenizer instanceof LazyTokenizer ? tokenizer.load() : Promise.resolve(tokenizer);
}

/** By name too: an env bundled with its own copy of this module throws its own class. */
export function isTokenizerNotLoaded(error: unknown): boolean {
  return error instanceof Error && error.name === "TokenizerNotLoadedError";
}
