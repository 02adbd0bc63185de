/**
 * What the commands that steer a running run share (mix, replay, guard, import): the
 * deployment's URL and token, an admin client for them, and a change checked against the
 * route's own request schema before anything is sent.
 */
import type { z } from "zod";
import { AdminClient } from "../client/admin-client";
import { summarizeDetails, toValidationDetails } from "../core/wire/validation";

export interface ConnectionOptions {
  api: string;
  token?: string;
  fetch?: typeof fetch;
}

export function connectionFrom(o: { api?: string; token?: string }): ConnectionOptions {
  if (!o.api) throw new Error("--api <url> is required (the deployment's URL)");
  const token = o.token ?? process.env.ATROPOS_EDGE_TOKEN ?? process.env.API_TOKEN;
  return { api: o.api, ...(token ? { token } : {}) };
}

export function adminClientOf(connection: ConnectionOptions): AdminClient {
  return new AdminClient({ url: connection.api, token: connection.token, fetch: connection.fetch });
}

/** The options that were given (undefined ones left out), parsed by `schema`; else a clear error. */
export function changeOf<T extends z.ZodType>(
  schema: T,
  fields: Record<string, unknown>,
): z.infer<T> {
  const change = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  const parsed = schema.safeParse(change);
  if (!parsed.success) throw new Error(summarizeDetails(toValidationDetails(parsed.error, change)));
  return parsed.data;
}

/** A numeric flag's value, or undefined when the flag was not given. */
export function numberFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new Error(`${flag} must be a number`);
  return n;
}
