/**
 * A Worker that is the sandbox service: env workers reach it through a service binding
 * (`SANDBOX`) and it owns the engines' bindings (Worker Loader, containers).
 *
 *     export default createSandboxService((env) => ({
 *       javascript: new WorkerLoaderSandbox(env.LOADER),
 *       python: new CloudflareContainerSandbox((id) => getSandbox(env.Sandbox, id)),
 *     }));
 */
import type { SandboxLanguage } from "../../core/wire/sandbox-schemas";
import { SandboxRouter } from "../../sandbox/router";
import { handleSandboxRequest } from "../../sandbox/service";
import type { Sandbox } from "../../sandbox/types";

export function createSandboxService<E>(
  engines: (env: E) => Partial<Record<SandboxLanguage, Sandbox>>,
): ExportedHandler<E> {
  return {
    fetch: (request, env) => handleSandboxRequest(new SandboxRouter(engines(env)), request),
  };
}
