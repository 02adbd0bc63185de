/**
 * Sandboxed code execution for envs, binding-free and Node-free (the Node engines live in
 * `./node/` and are exported from `atropos-edge/node`; the Worker adapters from
 * `atropos-edge/worker`).
 */
export {
  type HiddenTestsResult,
  hiddenTestHarness,
  runHiddenTests,
} from "./hidden-tests";
export { getSandbox, setDefaultSandboxProvider, setSandboxProvider } from "./registry";
export { SandboxRouter } from "./router";
export { DEFAULT_SCRATCH_LIMITS, ScratchFs, type ScratchLimits } from "./scratch-fs";
export {
  handleSandboxRequest,
  SANDBOX_RUN_PATH,
  type SandboxFetcher,
  SandboxServiceClient,
} from "./service";
export {
  failedRun,
  parseSandboxRequest,
  type Sandbox,
  type SandboxErrorKind,
  type SandboxLanguage,
  type SandboxRunInput,
  type SandboxRunRequest,
  type SandboxRunResult,
} from "./types";
