import { env, exports } from "cloudflare:workers";
import { createApp } from "../../src/api/app";
import type { Bindings } from "../../src/api/bindings";

export const REGISTRATION = {
  wandb_group: "group",
  wandb_project: "project",
  batch_size: 8,
  max_token_len: 2048,
  checkpoint_dir: "ckpt",
  save_checkpoint_interval: 10,
  starting_step: 0,
  num_steps: 100,
};

/** Sends a request through the real Worker entry point (workerd, local D1/R2/DOs). */
export async function call(path: string, init: RequestInit = {}): Promise<Response> {
  // why: the generated `exports` type does not know this Worker's default export.
  const worker = exports as unknown as { default: { fetch(request: Request): Promise<Response> } };
  return worker.default.fetch(new Request(`http://api.test${path}`, init));
}

/**
 * Same app with some bindings overridden (auth, limits), still on the real local bindings. Work
 * the app hands to `waitUntil` is awaited before the response is returned (as the runtime keeps
 * the request alive for it), and also passed to `waitUntil` when a test wants to see it.
 */
export async function callWith(
  overrides: Partial<Bindings>,
  path: string,
  init: RequestInit = {},
  waitUntil: (work: Promise<unknown>) => void = () => {},
): Promise<Response> {
  const app = createApp();
  const pending: Promise<unknown>[] = [];
  const ctx = {
    waitUntil: (work: Promise<unknown>) => {
      pending.push(work);
      waitUntil(work);
    },
    passThroughOnException: () => {},
    props: {},
  };
  const res = await app.fetch(
    new Request(`http://api.test${path}`, init),
    { ...(env as unknown as Bindings), ...overrides },
    ctx as unknown as ExecutionContext,
  );
  // Work may add more work while it runs: settle until nothing new was added.
  for (let settled = 0; settled < pending.length; ) {
    const batch = pending.slice(settled);
    settled = pending.length;
    await Promise.allSettled(batch);
  }
  return res;
}

export async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return call(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export async function json<T = Record<string, unknown>>(
  res: Response | Promise<Response>,
): Promise<T> {
  return (await res).json() as Promise<T>;
}

let counter = 0;
/** A unique run per test keeps tests independent (storage is shared within a file). */
export function uniqueRun(prefix = "t"): string {
  counter++;
  return `${prefix}-${Date.now().toString(36)}-${counter}`;
}

export function group(seed: number, size: number, envId: number | null, length = 6) {
  const tokens = Array.from({ length: size }, (_, s) =>
    Array.from({ length }, (_, i) => (seed * 131 + s * 17 + i) % 50000),
  );
  return {
    tokens,
    masks: tokens.map((seq) => seq.map((t, i) => (i < 2 ? -100 : t))),
    scores: Array.from({ length: size }, (_, s) => (s % 2 === 0 ? 1 : 0)),
    inference_logprobs: tokens.map((seq) => seq.map((_, i) => (i < 2 ? 1 : -0.25 * i))),
    env_id: envId,
  };
}

/**
 * Registers a trainer (batch size `batchSize`, sequences up to `maxTokenLen`) and one env per
 * group size; returns env ids.
 */
export async function setupRun(
  run: string,
  batchSize: number,
  groupSizes: number[],
  { maxTokenLen = REGISTRATION.max_token_len }: { maxTokenLen?: number } = {},
) {
  const base = `/runs/${run}`;
  const reg = await post(`${base}/register`, {
    ...REGISTRATION,
    batch_size: batchSize,
    max_token_len: maxTokenLen,
  });
  if (reg.status !== 200) throw new Error(await reg.text());
  const envIds: number[] = [];
  for (const [i, gs] of groupSizes.entries()) {
    const r = await json<{ env_id: number }>(
      post(`${base}/register-env`, {
        max_token_length: 1024,
        desired_name: `env${i}`,
        weight: 1,
        group_size: gs,
      }),
    );
    envIds.push(r.env_id);
  }
  return { base, envIds };
}

export async function gzip(text: string): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A finished trajectory of sequence `sequence` (no steps), as a submission carries it beside a group. */
export const trajectory = (sequence: number) => ({
  task: "t",
  steps: [],
  final_response: "done",
  success: true,
  judge_score: null,
  token_count: 6,
  wall_time_ms: 5,
  sequence,
  source: "env",
});
