/**
 * Where an env finds its sandbox. The runtime that hosts the env sets a provider (the CLI: the
 * local process pool; a Worker: a client of the sandbox service binding); env code calls
 * `getSandbox()` and stays the same in both. The provider runs on first use, so a runtime whose
 * envs never execute code starts no sandbox.
 */
import type { Sandbox } from "./types";

type SandboxProvider = () => Sandbox | Promise<Sandbox>;

let provider: SandboxProvider | null = null;
let current: Promise<Sandbox> | null = null;

/** Set how this process or isolate gets its sandbox (replaces an earlier provider). */
export function setSandboxProvider(next: SandboxProvider | null): void {
  provider = next;
  current = null;
}

/** Set a provider only if none is set yet (a test or project may have chosen one already). */
export function setDefaultSandboxProvider(next: SandboxProvider): void {
  if (!provider) setSandboxProvider(next);
}

/** The sandbox of this process or isolate; throws a message naming the fix when none is set. */
export function getSandbox(): Promise<Sandbox> {
  if (!provider) {
    return Promise.reject(
      new Error(
        "no sandbox is configured: run the env with the atropos-edge CLI (it starts a local one), call setSandboxProvider(), or bind a sandbox service as SANDBOX in the Worker",
      ),
    );
  }
  if (!current) {
    current = Promise.resolve().then(provider);
    current.catch(() => {
      current = null;
    });
  }
  return current;
}
