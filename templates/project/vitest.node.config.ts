import { defineConfig } from "vitest/config";

// Tests in plain Node (test/node/): the env against the inference simulator (runOnSimulator).
export default defineConfig({
  test: {
    include: ["test/node/**/*.test.ts"],
    environment: "node",
    testTimeout: 120_000,
  },
});
