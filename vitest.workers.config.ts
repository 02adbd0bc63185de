import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// Integration tests inside workerd with local D1, R2, Queues and Durable Objects.
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "drizzle"));
  return {
    plugins: [
      cloudflareTest({
        remoteBindings: false,
        wrangler: { configPath: "./wrangler.jsonc" },
        miniflare: {
          bindings: { TEST_MIGRATIONS: migrations, DEPLOYMENT: "local" },
          compatibilityFlags: ["service_binding_extra_handlers"],
        },
      }),
    ],
    test: {
      include: ["test/workers/**/*.test.ts"],
      setupFiles: ["./test/workers/apply-migrations.ts"],
      testTimeout: 60_000,
    },
  };
});
