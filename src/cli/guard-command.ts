/**
 * `atropos-edge guard --run RUN [--factor F] [--action alert|raise_replay|set_weights|pause_env]
 * [--fraction F] [--env-id N] [--weights 0=2,1=0.5] [--webhook URL|none] [--enable|--disable]
 * [--lower-is-better eval/loss,eval/err_*|none]`:
 * shows the run's regression guard (settings, baselines, latest events) or changes it first.
 */
import type { Command } from "commander";
import {
  type GuardStatus,
  guardConfigRequestSchema,
  type RunEvent,
} from "../core/wire/api-schemas";
import {
  adminClientOf,
  type ConnectionOptions,
  changeOf,
  connectionFrom,
  withConnectionOptions,
} from "./run-control";

export interface GuardOptions {
  run: string;
  enable?: boolean;
  disable?: boolean;
  factor?: string;
  lowerIsBetter?: string;
  action?: string;
  fraction?: string;
  envId?: string;
  weights?: string;
  webhook?: string;
}

function actionFrom(o: GuardOptions): unknown {
  switch (o.action) {
    case undefined:
      return undefined;
    case "alert":
      return { type: "alert" };
    case "raise_replay":
      return { type: "raise_replay", fraction: Number(o.fraction) };
    case "pause_env":
      return { type: "pause_env", env_id: Number(o.envId) };
    case "set_weights": {
      const pairs = (o.weights ?? "").split(",").filter((p) => p.trim() !== "");
      return {
        type: "set_weights",
        weights: Object.fromEntries(
          pairs.map((p) => {
            const [env, weight] = p.split("=");
            return [env?.trim() ?? "", Number(weight)];
          }),
        ),
      };
    }
    default:
      throw new Error(
        `--action must be alert, raise_replay (with --fraction), set_weights (with --weights 0=2,1=0.5) or pause_env (with --env-id); got '${o.action}'`,
      );
  }
}

export function formatGuard(g: GuardStatus, events: RunEvent[]): string {
  const action =
    g.action.type === "alert" ? "alert" : `${g.action.type} ${JSON.stringify(g.action)}`;
  const lines = [
    `guard ${g.enabled ? "on" : "off"}: factor ${g.factor}, action ${action}, webhook ${g.webhook_url ?? "none"}${g.lower_is_better.length > 0 ? `, lower is better: ${g.lower_is_better.join(", ")}` : ""}`,
    ...g.baselines.map((b) => `baseline env ${b.env_id} ${b.metric} = ${b.value} (${b.source})`),
    ...events.map((e) => `${new Date(e.created_at).toISOString()} ${e.kind}: ${e.message}`),
  ];
  return lines.join("\n");
}

export async function runGuard(connection: ConnectionOptions, o: GuardOptions): Promise<string> {
  if (o.enable && o.disable) throw new Error("give --enable or --disable, not both");
  const change = changeOf(guardConfigRequestSchema, {
    enabled: o.enable ? true : o.disable ? false : undefined,
    factor: o.factor === undefined ? undefined : Number(o.factor),
    lower_is_better:
      o.lowerIsBetter === undefined
        ? undefined
        : o.lowerIsBetter === "none"
          ? []
          : o.lowerIsBetter
              .split(",")
              .map((m) => m.trim())
              .filter((m) => m !== ""),
    action: actionFrom(o),
    webhook_url: o.webhook === undefined ? undefined : o.webhook === "none" ? null : o.webhook,
  });
  const client = adminClientOf(connection);
  if (Object.keys(change).length > 0) await client.setGuard(o.run, change);
  const [status, events] = await Promise.all([client.guard(o.run), client.events(o.run, 10)]);
  return formatGuard(status, events);
}

export function registerGuardCommand(program: Command): void {
  withConnectionOptions(
    program
      .command("guard")
      .description("show or configure a run's regression guard, with its latest events")
      .requiredOption("--run <run>", "the run"),
    "a trainer or admin",
  )
    .option("--enable", "turn the guard on")
    .option("--disable", "turn the guard off (baselines are still recorded)")
    .option("--factor <f>", "regression below factor × baseline (default 0.95)")
    .option(
      "--lower-is-better <metrics>",
      "comma-separated metrics where smaller is better (a trailing * is a prefix); none clears",
    )
    .option("--action <a>", "alert | raise_replay | set_weights | pause_env")
    .option("--fraction <f>", "replay fraction for raise_replay")
    .option("--env-id <n>", "env to pause for pause_env")
    .option("--weights <list>", "env_id=weight,… for set_weights")
    .option("--webhook <url>", "POST each regression event here; none removes it")
    .action(async (o: GuardOptions & { api?: string; token?: string }) => {
      console.log(await runGuard(connectionFrom(o), o));
    });
}
