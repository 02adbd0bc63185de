import { defineConfig } from "vitest/config";

// Pure logic and Node-side code (env runtime, inference, simulator, CLI): plain Node.
export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts"],
    environment: "node",
    globalSetup: ["test/scratch-tmpdir.ts"],
    testTimeout: 30_000,
  },
});
