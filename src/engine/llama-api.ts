/**
 * The part of node-llama-cpp (3.21.1) the engine uses, typed here because the package is not a
 * dependency of the project: it is installed on first use into a folder of its own
 * (llama-install.ts) and imported from there at run time. Names and shapes follow its .d.ts files.
 */

export interface LlamaModule {
  getLlama(options?: {
    gpu?: false | "auto";
    build?: "never";
    logLevel?: "disabled" | "fatal" | "error" | "warn" | "info" | "log" | "debug";
    progressLogs?: boolean;
    maxThreads?: number;
  }): Promise<Llama>;
}

export interface Llama {
  loadModel(options: {
    modelPath: string;
    gpuLayers?: number;
    useMmap?: boolean;
  }): Promise<LlamaModel>;
  readonly cpuMathCores: number;
  dispose(): Promise<void>;
}

export interface LlamaModel {
  readonly tokens: {
    readonly bos: number | null;
    readonly eos: number | null;
    readonly eot: number | null;
    readonly bosString: string | null;
    readonly eosString: string | null;
    readonly eotString: string | null;
    readonly shouldPrependBosToken: boolean;
  };
  readonly fileInfo: { metadata: GgufMetadata };
  readonly size: number;
  readonly trainContextSize: number;
  tokenize(text: string, specialTokens?: boolean): number[];
  detokenize(tokens: readonly number[], specialTokens?: boolean): string;
  isEogToken(token: number | undefined): boolean;
  getTokenAttributes(token: number): { readonly control: boolean };
  createContext(options: {
    contextSize?: number;
    sequences?: number;
    threads?: number;
    batchSize?: number;
    flashAttention?: boolean;
    experimentalKvCacheKeyType?: "F32" | "F16";
    experimentalKvCacheValueType?: "F32" | "F16";
  }): Promise<LlamaContext>;
  dispose(): Promise<void>;
}

export interface GgufMetadata {
  general?: { architecture?: string; name?: string; file_type?: number };
  tokenizer?: {
    chat_template?: string;
    ggml?: { tokens?: readonly string[]; token_type?: readonly number[] };
  };
}

export interface LlamaContext {
  readonly contextSize: number;
  getSequence(): LlamaContextSequence;
  dispose(): Promise<void>;
}

export interface SequenceEvaluateOptions {
  temperature?: number;
  minP?: number;
  topK?: number;
  topP?: number;
  seed?: number;
  yieldEogToken?: boolean;
}

export interface LlamaContextSequence {
  readonly contextTokens: number[];
  readonly nextTokenIndex: number;
  eraseContextTokenRanges(ranges: { start: number; end: number }[]): Promise<void>;
  clearHistory(): Promise<void>;
  evaluateWithMetadata(
    tokens: number[],
    metadata: { confidence: true },
    options?: SequenceEvaluateOptions,
  ): AsyncGenerator<{ token: number; confidence: number }, void, undefined>;
  dispose(): void;
}
