/** Types of tokenizers-r2.mjs (a plain Node script, run without a TypeScript loader). */
export declare const BUNDLED_DIR: string;

export interface SeedBucket {
  get(key: string): Promise<{ text(): Promise<string> } | null>;
  put(key: string, body: ArrayBuffer): Promise<unknown>;
}

export interface SeedOptions {
  dir?: string;
  families?: string[];
  log?: (line: string) => void;
}

export declare function bundledFamilies(dir?: string): string[];
export declare function tokenizerObjects(
  family: string,
  dir?: string,
): { key: string; body: Buffer }[];
export declare function seedBucket(bucket: SeedBucket, options?: SeedOptions): Promise<string[]>;
export declare function seedWithWrangler(
  wrangler: (args: string[]) => { status: number | null; stdout?: string; stderr?: string },
  bucketName: string,
  options?: SeedOptions & { where?: "--remote" | "--local" },
): string[];
