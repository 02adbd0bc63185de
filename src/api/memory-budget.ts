/**
 * One memory budget per isolate for the work that holds whole groups in memory: parsing request
 * bodies (ingest) and canonicalising stored payloads (delivery). It is charged an estimate of the
 * memory each piece of work holds; work that does not fit waits its turn (first come, first
 * served), so a burst of large groups cannot push the isolate over the Workers limit of 128 MB
 * (which would fail every request in it). The default, 8 MiB of estimated cost, lets one large
 * group (or a few small ones) be parsed at a time: on this runtime that is also faster than
 * interleaving many parses (A/B on the bench machine: ingest 1.7× higher for 2k- and 8k-token
 * groups, same end-to-end; docs/BENCHMARKS.md). Set MEMORY_BUDGET_MB to change it.
 *
 * A request body is charged once it has arrived, by its real size (src/api/submission-body.ts):
 * a body still on the wire holds nothing here, so a client that stalls its upload cannot make
 * every other submission wait. A gzip body is charged by what it inflates to (`withInflated`): a
 * small gzip of a huge text cannot be parsed on its compressed size's charge.
 */
import { ByteBudget } from "../core/concurrency/byte-budget";
import type { Bindings } from "./bindings";
import { settingsOf } from "./settings";

let budget: ByteBudget | null = null;

/**
 * A group's JSON text parses into ~3× its size (bytes, string and JS arrays alive together), and
 * gzip bodies of token ids and logprobs inflate 2–4×: charge 3× plain bytes, 10× gzip bytes.
 */
export function memoryCost(bytes: number, gzip: boolean): number {
  return bytes * (gzip ? 10 : 3);
}

/**
 * Runs `work` on a body's text, charged by the text's real size. A gzip body is inflated (by
 * `inflate`, bounded) under the estimate of its compressed size; when its text costs more than
 * that, `work` waits for a charge of the real cost instead of running on the estimate.
 */
export async function withInflated<T>(
  env: Bindings,
  body: { raw: Uint8Array; gzip: boolean },
  inflate: (raw: Uint8Array) => Uint8Array,
  work: (bytes: Uint8Array) => Promise<T>,
): Promise<T> {
  if (!body.gzip)
    return withMemory(env, memoryCost(body.raw.byteLength, false), () => work(body.raw));
  const estimate = memoryCost(body.raw.byteLength, true);
  let text: Uint8Array = body.raw;
  const first = await withMemory(env, estimate, async () => {
    text = inflate(body.raw);
    if (memoryCost(text.byteLength, false) > estimate) return { ran: false as const };
    return { ran: true as const, value: await work(text) };
  });
  if (first.ran) return first.value;
  return withMemory(env, memoryCost(text.byteLength, false), () => work(text));
}

export function withMemory<T>(env: Bindings, cost: number, work: () => Promise<T>): Promise<T> {
  budget ??= new ByteBudget(settingsOf(env).MEMORY_BUDGET_MB * 2 ** 20);
  return budget.run(cost, work);
}
