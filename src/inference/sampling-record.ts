/**
 * Sampling that is not repeated when an attempt runs again. A Worker's rollout runs again when the
 * env used its tokenizer synchronously before it was loaded (worker-env.ts): inside
 * `withSamplingRecord`, every inference answer is recorded by request (method, URL and body),
 * and the same request made again within the same record gets the recorded answer instead of a
 * new sample. The scope follows the attempt's async context, so concurrent items sharing an env
 * instance (and its ServerManager) never see each other's answers.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { FetchLike } from "./backends/http";

interface Recorded {
  body: ArrayBuffer;
  status: number;
  headers: [string, string][];
}

/** An answer as it is recorded: in flight, then the answer, or null when it failed. */
type Slot = Promise<Recorded | null>;

/**
 * The answers of one rollout's inference requests, in order per request. A request is recorded
 * when it is sent, so an attempt that runs while an earlier attempt's request is still out waits
 * for that answer instead of sampling again.
 */
export class SamplingRecord {
  readonly answers = new Map<string, Slot[]>();
}

/**
 * One run of the attempt: which recorded answers it has been handed. Its own, so a first attempt
 * still running after it failed (a request of a `Promise.all` that rejected) does not move the
 * next attempt's place.
 */
class Attempt {
  private readonly used = new Map<string, number>();

  constructor(private readonly record: SamplingRecord) {}

  /**
   * The next recorded answer to `key` for this attempt, skipping failed ones; null when none.
   * Waiting for one still in flight ends with `signal` (this request's own time-out or abort).
   */
  async take(key: string, signal?: AbortSignal | null): Promise<Recorded | null> {
    const list = this.record.answers.get(key) ?? [];
    for (let n = this.used.get(key) ?? 0; n < list.length; n = this.used.get(key) ?? 0) {
      this.used.set(key, n + 1);
      const answer = await untilAborted(list[n]!, signal);
      if (answer) return answer;
    }
    return null;
  }

  /** Records a request this attempt sends now; it is past every answer recorded so far. */
  add(key: string, answer: Slot): void {
    const list = this.record.answers.get(key) ?? [];
    list.push(answer);
    this.record.answers.set(key, list);
    this.used.set(key, list.length);
  }
}

/** `promise`, or a rejection with `signal`'s reason once it aborts. */
function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal | null): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}

const scope = new AsyncLocalStorage<Attempt>();

/** Runs `attempt` recording (and replaying) its inference answers in `record`. */
export function withSamplingRecord<T>(
  record: SamplingRecord,
  attempt: () => Promise<T>,
): Promise<T> {
  return scope.run(new Attempt(record), attempt);
}

/** `fetchFn`, recording and replaying answers inside a `withSamplingRecord` scope. */
export function recordingFetch(fetchFn: FetchLike): FetchLike {
  return async (input, init) => {
    const attempt = scope.getStore();
    // Only requests whose body can be compared (JSON text) are recorded.
    if (!attempt || (init?.body !== undefined && typeof init.body !== "string")) {
      return fetchFn(input, init);
    }
    const key = JSON.stringify([init?.method ?? "GET", input, init?.body ?? ""]);
    const recorded = await attempt.take(key, init?.signal);
    if (recorded) return replayed(recorded);
    let settle: (answer: Recorded | null) => void = () => {};
    attempt.add(key, new Promise((resolve) => (settle = resolve)));
    try {
      const response = await fetchFn(input, init);
      // A failed request is made again (the backend's retry decides): it records no answer.
      if (!response.ok) {
        settle(null);
        return response;
      }
      const answer: Recorded = {
        body: await response.arrayBuffer(),
        status: response.status,
        headers: [...response.headers],
      };
      settle(answer);
      return replayed(answer);
    } catch (error) {
      settle(null);
      throw error;
    }
  };
}

function replayed(answer: Recorded): Response {
  return new Response(answer.body.slice(0), { status: answer.status, headers: answer.headers });
}
