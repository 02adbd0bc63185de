declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    DB: D1Database;
    /** GET /<family> → the R2 objects of a bundled tokenizer, {key: base64} (vitest config). */
    TEST_TOKENIZER_OBJECTS: Fetcher;
    /** A Worker Loader binding for the sandbox adapter (vitest config). */
    TEST_LOADER: WorkerLoader;
  }
}
