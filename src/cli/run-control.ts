/**
 * What the commands that talk to a deployment share (mix, replay, guard, import, tokens,
 * inference): the --api and --token options, an admin client for them, and a change checked
 * against the route's own request schema before anything is sent.
 */
import type { Command } from "commander";
import type { z } from "zod";
import { AdminClient } from "../client/admin-client";
import { summarizeDetails, toValidationDetails } from "../core/wire/validation";

export interface ConnectionOptions {
  api: string;
  token?: string;
  fetch?: typeof fetch;
}

/**
 * Adds `--api` and `--token`; commander reads the token from the flag, else $ATROPOS_EDGE_TOKEN
 * (help shows it). Built with the command's own createOption: a value import of commander would
 * not load in the Workers tests that import these commands.
 */
export function withConnectionOptions(cmd: Command, holder: string): Command {
  const token = `${holder} token; without it or the env var, $API_TOKEN`;
  return cmd
    .option("--api <url>", "rollout API URL")
    .addOption(cmd.createOption("--token <t>", token).env("ATROPOS_EDGE_TOKEN"));
}

/**
 * The deployment to talk to. The token is --token or $ATROPOS_EDGE_TOKEN (commander), else
 * $API_TOKEN: the name the Worker itself reads its admin token from (commander takes one env var
 * per option, so this second one is ours).
 */
export function connectionFrom(o: { api?: string; token?: string }): ConnectionOptions {
  if (!o.api) throw new Error("--api <url> is required (the deployment's URL)");
  const token = o.token ?? process.env.API_TOKEN;
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
