import { defineConfig } from "vitest/config";

// End-to-end: real `wrangler dev` processes, the inference simulator, Python clients, Chromium.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.test.ts"],
    environment: "node",
    globalSetup: ["test/scratch-tmpdir.ts"],
    setupFiles: ["test/e2e/dev-logs-on-failure.ts"],
    testTimeout: 180_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
