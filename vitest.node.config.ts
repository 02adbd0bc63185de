import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Pure logic and Node-side code (env runtime, inference, simulator, CLI): plain Node.
export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts"],
    environment: "node",
    globalSetup: ["test/scratch-tmpdir.ts"],
    testTimeout: 30_000,
    // One worker per core, not vitest's cores − 1: many of these tests wait on child processes
    // (the CLI, Python, workerd), so on a 2-core machine one worker left a core idle.
    maxWorkers: availableParallelism(),
  },
});
