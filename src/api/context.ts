import type { Context } from "hono";
import type { InferenceProxy } from "../core/wire/proxy-session";
import { runNameSchema } from "../core/wire/schemas";
import type { Bindings } from "./bindings";
import { ApiError } from "./errors";
import type { StoredToken } from "./storage/tokens";
import type { Timings } from "./timings";

/** Who is calling: the admin token, a stored token, or anyone (open local development). */
export type Principal =
  | { kind: "admin" }
  | { kind: "open" }
  | { kind: "token"; token: StoredToken };

export interface AppEnv {
  Bindings: Bindings;
  Variables: {
    requestId: string;
    timings: Timings;
    principal: Principal;
    /** Forwards inference-proxy calls; absent when the Worker was built without one. */
    inferenceProxy: InferenceProxy | undefined;
    /** Set by a pull that found no batch and changed nothing: the request log leaves it out. */
    quietPoll: boolean;
  };
}

export type AppContext = Context<AppEnv>;

export const DEFAULT_RUN = "default";

/** The run a request addresses: `/runs/{run}/…`, `/v1/runs/{run}/…`, or "default" at the root. */
export function runOf(c: AppContext): string {
  const run = c.req.param("run") ?? DEFAULT_RUN;
  const parsed = runNameSchema.safeParse(run);
  if (!parsed.success) {
    throw new ApiError(
      "BAD_REQUEST",
      `invalid run name '${run}': ${parsed.error.issues[0]?.message}`,
    );
  }
  return run;
}

export function coordinator(c: AppContext, run: string) {
  return c.env.RUN_COORDINATOR.get(c.env.RUN_COORDINATOR.idFromName(run));
}

/** `waitUntil` of this request, where the runtime provides one (work that must outlive a disconnect). */
export function keepAliveOf(c: AppContext): ((work: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (work) => ctx.waitUntil(work);
  } catch {
    return undefined; // no ExecutionContext (e.g. app.request in a unit test)
  }
}
