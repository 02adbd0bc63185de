/**
 * The sandbox a Node runtime (`serve`, `process`, `start`, `evaluate`, tests) runs beside the env:
 * Python in throwaway Pyodide processes, JavaScript in throwaway QuickJS threads, each with a
 * warm pool.
 */
import { SandboxRouter } from "../router";
import { type PythonPoolOptions, PythonProcessPool } from "./python-pool";
import { QuickJsThreadPool } from "./quickjs-pool";

export interface LocalSandboxOptions {
  python?: PythonPoolOptions;
  /** Warm QuickJS threads (default 2). */
  javascriptPoolSize?: number;
}

export function createLocalSandbox(options: LocalSandboxOptions = {}): SandboxRouter {
  return new SandboxRouter({
    python: new PythonProcessPool(options.python),
    javascript: new QuickJsThreadPool({ size: options.javascriptPoolSize ?? 2 }),
  });
}
