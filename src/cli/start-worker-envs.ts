/**
 * `start --workers`' env runners: each env on the Worker's queue path (an EnvFeeder Durable Object
 * feeding queue-consumer invocations), started, polled and stopped through the admin client.
 */
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { AdminApiError, AdminClient, type EnvWorker } from "../client/admin-client";
import { errorMessage } from "../core/errors";
import { isServerType, serverTypeError } from "../core/wire/server-config";
import type { FeederSummary } from "../worker/env-feeder";
import { PROJECT_ROOT } from "./dev-process";
import type { InferenceFlags, InferenceHandle } from "./inference";

/** An env running on the Worker's queue path, seen through its EnvFeeder's status endpoint. */
export interface WorkerEnvRun {
  name: string;
  /** …/v1/runs/{run}/env-workers/{env}/0 */
  url: string;
  summary: FeederSummary | null;
  pollError: string | null;
  /** reported_at of the feeder's back-off reason last printed. */
  backoffPrinted?: number;
  /** The feeder's dropped + rejected count already passed to the learning curve. */
  dropsRecorded?: number;
}

/** The feeder's back-off reason when it is a new report (every 10 s while it lasts), else null. */
export function newBackoffReport(env: WorkerEnvRun): string | null {
  const backingOff = env.summary?.backing_off;
  if (!backingOff || backingOff.reported_at === env.backoffPrinted) return null;
  env.backoffPrinted = backingOff.reported_at;
  return `${env.name}: ${backingOff.message}`;
}

const WORKER_INSTANCE = "0";
/** Give up on --workers when every env has failed this many items and none succeeded. */
const WORKER_FAILURES_BEFORE_GIVING_UP = 20;

/**
 * The inference server as the Worker must reach it (the simulator listens on 127.0.0.1), with
 * the same --server-type as the Node side (the simulator answers every type).
 */
export function workerInference(options: InferenceFlags, inference: InferenceHandle) {
  // openInference has refused anything else by now.
  if (!isServerType(options.serverType)) throw serverTypeError(options.serverType);
  return {
    base_url: inference.baseUrl,
    server_type: options.serverType,
    model_name: options.model,
    tokenizer_name: options.tokenizer,
    api_key: options.apiKey ?? "",
  };
}

/** The schema checks the fields every answer names and keeps the rest: the feeder's summary. */
function asSummary(worker: EnvWorker): FeederSummary {
  return worker as unknown as FeederSummary;
}

/**
 * A Worker entry registering exactly the envs of this run, for `--workers` with envs given by
 * path: the project's own entry may not know them. Bindings stay the project's wrangler config.
 */
export function writeWorkerEntry(
  stateDir: string,
  envNames: string[],
  modules: (string | null)[],
): string {
  const file = join(stateDir, "worker-entry.ts");
  const imports = modules.map((m, i) =>
    m === null ? "" : `import env${i} from ${JSON.stringify(resolve(m))};\n`,
  );
  const envs = modules.map((m, i) =>
    m === null ? `builtinEnvs.get(${JSON.stringify(envNames[i])})` : `env${i}`,
  );
  writeFileSync(
    file,
    `// Written by atropos-edge start --workers: the envs of this run on the package's factory.
import { builtinEnvs } from ${JSON.stringify(join(PROJECT_ROOT, "src", "envs", "index.ts"))};
import { createWorker } from ${JSON.stringify(join(PROJECT_ROOT, "src", "sdk", "worker.ts"))};
${imports.join("")}
const worker = createWorker({ envs: [${envs.join(", ")}] });
export const { RunCoordinator, EnvSession, EnvFeeder } = worker.durableObjects;
export default worker.handler;
`,
  );
  return file;
}

/** The env workers of one run, reached through the admin client (with its token, if any). */
export class WorkerEnvs {
  readonly runs: WorkerEnvRun[] = [];

  constructor(
    private readonly admin: AdminClient,
    private readonly apiUrl: string,
    private readonly run: string,
  ) {}

  static connect(apiUrl: string, run: string, token?: string): WorkerEnvs {
    return new WorkerEnvs(new AdminClient({ url: apiUrl, token }), apiUrl, run);
  }

  async start(
    name: string,
    config: Record<string, unknown>,
    inference: ReturnType<typeof workerInference>,
  ): Promise<WorkerEnvRun> {
    // A key never travels in queue messages: the run stores the server (key sealed) and the env
    // worker refers to the run's servers.
    if (inference.api_key) await this.admin.setInference(this.run, [inference]);
    const summary = await this.admin.startEnvWorker(this.run, {
      env: name,
      instance: WORKER_INSTANCE,
      config,
      inference: inference.api_key ? "run" : [inference],
    });
    const env: WorkerEnvRun = {
      name,
      url: `${this.apiUrl}/v1/runs/${encodeURIComponent(this.run)}/env-workers/${encodeURIComponent(name)}/${WORKER_INSTANCE}`,
      summary: asSummary(summary),
      pollError: null,
    };
    this.runs.push(env);
    return env;
  }

  async poll(env: WorkerEnvRun): Promise<void> {
    try {
      env.summary = asSummary(await this.admin.envWorker(this.run, env.name, WORKER_INSTANCE));
      env.pollError = null;
    } catch (err) {
      env.pollError = errorMessage(err);
    }
  }

  /** Polls every env worker once (failures are kept per env, never thrown). */
  async pollAll(): Promise<void> {
    await Promise.allSettled(this.runs.map((e) => this.poll(e)));
  }

  /** Stops every env worker, then takes a last snapshot of each. */
  async stopAll(): Promise<void> {
    await Promise.allSettled(
      this.runs.map(async (e) => {
        // An API that answers (even 404) gets the last poll; one that is gone keeps the last summary.
        await this.admin.stopEnvWorker(this.run, e.name, WORKER_INSTANCE).catch((err: unknown) => {
          if (!(err instanceof AdminApiError)) throw err;
        });
        await this.poll(e);
      }),
    );
  }

  /** Why the --workers run cannot make progress, or null while it still can. */
  failure(): string | null {
    const envs = this.runs;
    const hopeless = envs.every(
      (e) =>
        e.summary &&
        (e.summary.status === "stopped" ||
          (e.summary.succeeded === 0 && e.summary.failed >= WORKER_FAILURES_BEFORE_GIVING_UP)),
    );
    if (!hopeless) return null;
    return `every env worker failed or stopped: ${envs
      .map(
        (e) =>
          `${e.name}: ${e.summary?.status}, ${e.summary?.failed} failed${e.summary?.last_error ? ` (${e.summary.last_error})` : ""}`,
      )
      .join("; ")}`;
  }

  /** The env whose feeder reported this env id, if its status has been polled. */
  byEnvId(envId: number | null): WorkerEnvRun | undefined {
    return this.runs.find((e) => e.summary?.env_id === envId);
  }
}
