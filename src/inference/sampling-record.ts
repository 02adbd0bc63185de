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

/** The answers of one rollout's inference requests, in order per request. */
export class SamplingRecord {
  private readonly answers = new Map<string, Recorded[]>();
  /** Answers handed out so far per request, by the attempt now running. */
  private used = new Map<string, number>();

  /** Starts an attempt: recorded answers are handed out again from the first. */
  rewind(): void {
    this.used = new Map();
  }

  take(key: string): Recorded | undefined {
    const n = this.used.get(key) ?? 0;
    const answer = this.answers.get(key)?.[n];
    if (answer) this.used.set(key, n + 1);
    return answer;
  }

  add(key: string, answer: Recorded): void {
    const list = this.answers.get(key) ?? [];
    list.push(answer);
    this.answers.set(key, list);
    this.used.set(key, (this.used.get(key) ?? 0) + 1);
  }
}

const scope = new AsyncLocalStorage<SamplingRecord>();

/** Runs `attempt` recording (and replaying) its inference answers in `record`. */
export function withSamplingRecord<T>(
  record: SamplingRecord,
  attempt: () => Promise<T>,
): Promise<T> {
  record.rewind();
  return scope.run(record, attempt);
}

/** `fetchFn`, recording and replaying answers inside a `withSamplingRecord` scope. */
export function recordingFetch(fetchFn: FetchLike): FetchLike {
  return async (input, init) => {
    const record = scope.getStore();
    // Only requests whose body can be compared (JSON text) are recorded.
    if (!record || (init?.body !== undefined && typeof init.body !== "string")) {
      return fetchFn(input, init);
    }
    const key = JSON.stringify([init?.method ?? "GET", input, init?.body ?? ""]);
    const recorded = record.take(key);
    if (recorded) {
      return new Response(recorded.body.slice(0), {
        status: recorded.status,
        headers: recorded.headers,
      });
    }
    const response = await fetchFn(input, init);
    // A failed request is made again (the backend's retry decides).
    if (!response.ok) return response;
    const answer: Recorded = {
      body: await response.arrayBuffer(),
      status: response.status,
      headers: [...response.headers],
    };
    record.add(key, answer);
    return new Response(answer.body.slice(0), { status: answer.status, headers: answer.headers });
  };
}
