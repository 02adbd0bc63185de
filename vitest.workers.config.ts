import { availableParallelism } from "node:os";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { tokenizerObjects } from "./scripts/tokenizers-r2.mjs";

// Integration tests inside workerd with local D1, R2, Queues and Durable Objects.
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "drizzle"));
  return {
    plugins: [
      cloudflareTest({
        remoteBindings: false,
        wrangler: { configPath: "./wrangler.jsonc" },
        // The public factory with test-only envs added (tests and Worker share one isolate).
        main: "./test/workers/test-worker.ts",
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            DEPLOYMENT: "local",
            // Feeder ticks only when a test runs its alarm (runDurableObjectAlarm): under load
            // a 10 ms first tick would otherwise race the test's own.
            FEEDER_TICK_MS: "3600000",
          },
          compatibilityFlags: ["service_binding_extra_handlers"],
          // Dynamic Workers for the sandbox adapter's tests (locally without CPU or memory limits,
          // so those tests run only code that ends).
          workerLoaders: { TEST_LOADER: {} },
          serviceBindings: {
            // GET /<family>: the R2 objects dev and deploy upload for a bundled tokenizer, as
            // {key: base64}, so a test puts exactly those into its bucket.
            TEST_TOKENIZER_OBJECTS: (request: Request) => {
              const family = new URL(request.url).pathname.slice(1);
              return Response.json(
                Object.fromEntries(
                  tokenizerObjects(family).map(({ key, body }) => [key, body.toString("base64")]),
                ),
              );
            },
          },
        },
      }),
    ],
    test: {
      include: ["test/workers/**/*.test.ts"],
      setupFiles: ["./test/workers/apply-migrations.ts"],
      testTimeout: 60_000,
      // One worker per core, not vitest's cores − 1: each file's start-up waits on workerd.
      maxWorkers: availableParallelism(),
    },
  };
});
