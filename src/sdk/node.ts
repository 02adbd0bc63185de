/**
 * `atropos-edge/node`: Node-side runtimes and helpers for scripts and tests: run an env against a
 * rollout API (`serveEnv`), offline to JSONL (`processEnv`), real tokenizers, inference clients
 * and the inference simulator (a test double speaking the vLLM, SGLang and OpenAI wire formats),
 * with `runOnSimulator` for an env's own end-to-end test.
 */
export { ServerManager, type ServerManagerOptions } from "../env-workers/inference/server-manager";
export { RolloutApiClient } from "../env-workers/runtime/api-client";
export { nodeGetWithBody } from "../env-workers/runtime/node-get-with-body";
export { groupToJsonl, type ProcessOptions, processEnv } from "../env-workers/runtime/process";
export { type ServeOptions, type ServeSummary, serveEnv } from "../env-workers/runtime/serve";
export {
  createLocalSandbox,
  type LocalSandboxOptions,
} from "../env-workers/sandbox/node/local-sandbox";
export {
  networkIsolationAvailable,
  networkIsolationFlags,
  type PythonPoolOptions,
  PythonProcessPool,
} from "../env-workers/sandbox/node/python-pool";
export {
  type QuickJsPoolOptions,
  QuickJsThreadPool,
} from "../env-workers/sandbox/node/quickjs-pool";
export { availableTokenizerNames, getTokenizer } from "../env-workers/tokenizers/index";
export { runOnSimulator, type SimulatedRun, type SimulatedRunOptions } from "../sim/env-check";
export { type Simulator, type SimulatorOptions, startSimulator } from "../sim/server";
