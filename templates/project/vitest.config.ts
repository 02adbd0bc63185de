import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// Tests run inside workerd with this project's wrangler config: local D1, R2, Queues, DOs.
export default defineConfig(async () => {
  const migrations = await readD1Migrations(
    path.join(import.meta.dirname, "node_modules", "atropos-edge", "drizzle"),
  );
  return {
    plugins: [
      cloudflareTest({
        remoteBindings: false,
        wrangler: { configPath: "./wrangler.jsonc" },
        miniflare: { bindings: { TEST_MIGRATIONS: migrations, DEPLOYMENT: "local" } },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      // test/node/ runs in plain Node (vitest.node.config.ts), not in workerd.
      exclude: ["test/node/**", "node_modules/**"],
      setupFiles: ["./test/apply-migrations.ts"],
    },
  };
});
