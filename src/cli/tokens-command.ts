/**
 * `atropos-edge tokens create|list|revoke --api URL --token ADMIN_TOKEN` (docs/API.md "Tokens").
 * The admin token defaults to $ATROPOS_EDGE_TOKEN, then $API_TOKEN (run-control.ts).
 */
import type { Command } from "commander";
import { createTokenRequestSchema, type TokenInfo } from "../core/wire/tokens";
import { summarizeDetails, toValidationDetails } from "../core/wire/validation";
import {
  adminClientOf,
  type ConnectionOptions,
  connectionFrom,
  withConnectionOptions,
} from "./run-control";

export interface CreateOptions {
  name: string;
  scope: string[];
  run?: string;
  rps?: string;
  bytesPerDay?: string;
  proxyTokensPerDay?: string;
}

function optionalNumber(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} must be a positive number`);
  return n;
}

/** One line per token: id, name, scopes, run, limits, state. */
export function formatToken(t: TokenInfo): string {
  const limits = [
    t.rps_limit === null ? null : `${t.rps_limit} req/s`,
    t.bytes_per_day === null ? null : `${t.bytes_per_day} B/day`,
    t.proxy_tokens_per_day === null ? null : `${t.proxy_tokens_per_day} proxy tokens/day`,
  ].filter((l) => l !== null);
  return [
    t.id,
    t.name,
    t.scopes.join(","),
    t.run === null ? "all runs" : `run ${t.run}`,
    limits.length ? limits.join(" ") : "no quota",
    t.revoked_at === null ? "active" : `revoked ${new Date(t.revoked_at).toISOString()}`,
  ].join("  ");
}

/** Creates a token; returns what to print (the secret once, and how to use it). */
export async function runTokensCreate(
  options: ConnectionOptions,
  create: CreateOptions,
): Promise<string> {
  const request = {
    name: create.name,
    scopes: create.scope.flatMap((s) => s.split(",")).filter((s) => s !== ""),
    run: create.run ?? null,
    rps_limit: optionalNumber(create.rps, "--rps"),
    bytes_per_day: optionalNumber(create.bytesPerDay, "--bytes-per-day"),
    proxy_tokens_per_day: optionalNumber(create.proxyTokensPerDay, "--proxy-tokens-per-day"),
  };
  const parsed = createTokenRequestSchema.safeParse(request);
  if (!parsed.success) {
    throw new Error(summarizeDetails(toValidationDetails(parsed.error, request)));
  }
  const created = await adminClientOf(options).createToken(parsed.data);
  return [
    formatToken(created),
    `secret (shown once; store it now): ${created.secret}`,
    `use: Authorization: Bearer ${created.secret}`,
  ].join("\n");
}

export async function runTokensList(options: ConnectionOptions, json = false): Promise<string> {
  const tokens = await adminClientOf(options).listTokens();
  if (json) return JSON.stringify(tokens, null, 2);
  return tokens.length ? tokens.map(formatToken).join("\n") : "no tokens";
}

export async function runTokensRevoke(options: ConnectionOptions, id: string): Promise<string> {
  return formatToken(await adminClientOf(options).revokeToken(id));
}

export function registerTokensCommand(program: Command): void {
  const tokens = program
    .command("tokens")
    .description("create, list and revoke API tokens (needs the admin token)");
  const common = (c: Command) => withConnectionOptions(c, "admin");
  common(tokens.command("create").description("create a token; prints its secret once"))
    .requiredOption("--name <name>", "who or what holds it")
    .requiredOption(
      "--scope <scope...>",
      "admin, trainer, env, contributor or read (several: repeat or comma-separate)",
    )
    .option("--run <run>", "bind the token to one run (required for contributor)")
    .option("--rps <n>", "requests per second")
    .option("--bytes-per-day <n>", "submitted body bytes per UTC day")
    .option("--proxy-tokens-per-day <n>", "inference proxy tokens per UTC day (not enforced yet)")
    .action(async (o: CreateOptions & { api?: string; token?: string }) => {
      console.log(await runTokensCreate(connectionFrom(o), o));
    });
  common(tokens.command("list").description("list tokens (never their secrets)"))
    .option("--json", "print JSON")
    .action(async (o: { api?: string; token?: string; json?: boolean }) => {
      console.log(await runTokensList(connectionFrom(o), o.json === true));
    });
  common(tokens.command("revoke").description("revoke a token by id").argument("<id>")).action(
    async (id: string, o: { api?: string; token?: string }) => {
      console.log(await runTokensRevoke(connectionFrom(o), id));
    },
  );
}
