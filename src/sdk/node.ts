/**
 * `atropos-edge/node`: Node-side runtimes and helpers for scripts and tests: run an env against a
 * rollout API (`serveEnv`), offline to JSONL (`processEnv`), real tokenizers, inference clients
 * and the inference simulator (a test double speaking the vLLM, SGLang and OpenAI wire formats),
 * with `runOnSimulator` for an env's own end-to-end test.
 */

export { RolloutApiClient } from "../env-sdk/runtime/api-client";
export { nodeGetWithBody } from "../env-sdk/runtime/node-get-with-body";
export { groupToJsonl, type ProcessOptions, processEnv } from "../env-sdk/runtime/process";
export { type ServeOptions, type ServeSummary, serveEnv } from "../env-sdk/runtime/serve";
export { ServerManager, type ServerManagerOptions } from "../inference/server-manager";
export { availableTokenizerNames, getTokenizer } from "../inference/tokenizers/index";
export {
  createLocalSandbox,
  type LocalSandboxOptions,
} from "../sandbox/node/local-sandbox";
export {
  networkIsolationAvailable,
  networkIsolationFlags,
  type PythonPoolOptions,
  PythonProcessPool,
} from "../sandbox/node/python-pool";
export {
  type QuickJsPoolOptions,
  QuickJsThreadPool,
} from "../sandbox/node/quickjs-pool";
export { runOnSimulator, type SimulatedRun, type SimulatedRunOptions } from "../sim/env-check";
export { type Simulator, type SimulatorOptions, startSimulator } from "../sim/server";
