/**
 * Runs the regression guard on an evaluation as it is reported: first values become baselines,
 * a value below factor × baseline runs the run's action, is recorded as a run event, and is
 * POSTed to the webhook when one is set.
 */

import {
  checkEvaluation,
  describeRegression,
  type GuardAction,
} from "../core/closed-loop/regression-guard";
import { privateTargetReason } from "../core/closed-loop/webhook-target";
import type { RunEvent } from "../core/wire/api-schemas";
import type { Bindings } from "./bindings";
import { settingsOf } from "./settings";
import { updateEnvControl } from "./storage/env-control";
import { addRunEvent, envBaselines, getGuard, putBaselines } from "./storage/guard";
import { evaluationAtStep } from "./storage/metrics";
import { updateReplayConfig } from "./storage/replay";
import { getRun } from "./storage/runs";

/** Carries the action out; returns what changed, for the event. */
async function applyAction(
  d1: D1Database,
  run: string,
  action: GuardAction,
): Promise<Record<string, unknown>> {
  switch (action.type) {
    case "alert":
      return {};
    case "raise_replay": {
      const row = await getRun(d1, run);
      const current = row?.replayEnabled ? row.replayFraction : 0;
      if (current >= action.fraction) return { replay_fraction: current, unchanged: true };
      await updateReplayConfig(d1, run, { enabled: true, fraction: action.fraction });
      return { replay_fraction: action.fraction, previous: current };
    }
    case "set_weights": {
      const changed: Record<string, number | null> = {};
      for (const [envId, weight] of Object.entries(action.weights)) {
        const after = await updateEnvControl(d1, run, Number(envId), { weight });
        changed[envId] = after ? after.weight : null;
      }
      return { weights: changed };
    }
    case "pause_env": {
      const after = await updateEnvControl(d1, run, action.env_id, { paused: true });
      return { paused_env: action.env_id, found: after !== null };
    }
  }
}

/** Whether the operator lets webhooks target private networks (GUARD_WEBHOOK_ALLOW_PRIVATE). */
export function privateWebhooksAllowed(env: Bindings): boolean {
  return settingsOf(env).GUARD_WEBHOOK_ALLOW_PRIVATE;
}

async function postWebhook(
  env: Bindings,
  url: string,
  run: string,
  event: RunEvent,
): Promise<void> {
  try {
    // Checked again when sending: the URL may predate the check, or the setting changed since.
    const reason = privateWebhooksAllowed(env) ? null : privateTargetReason(url);
    if (reason !== null) throw new Error(`refused: ${reason}`);
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ run, event }),
      // A redirect could lead into a private network; a webhook answers, it does not redirect.
      redirect: "manual",
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
  } catch (err) {
    console.log(
      JSON.stringify({ level: "warn", msg: "guard webhook failed", run, url, error: String(err) }),
    );
  }
}

/** Checks the evaluation an env reported for `step`; returns the regression event, if any. */
export async function guardEvaluation(
  env: Bindings,
  run: string,
  envId: number,
  step: number,
  waitUntil: (work: Promise<unknown>) => void,
): Promise<RunEvent | null> {
  const d1 = env.DB;
  const metrics = await evaluationAtStep(d1, run, envId, step);
  if (!metrics) return null;
  const [config, baselines] = await Promise.all([getGuard(d1, run), envBaselines(d1, run, envId)]);
  const check = checkEvaluation(
    baselines,
    envId,
    step,
    metrics,
    config.factor,
    config.lower_is_better,
  );
  await putBaselines(
    d1,
    run,
    check.newBaselines.map((b) => ({ env_id: envId, ...b })),
    "first",
  );
  if (!config.enabled || check.regressions.length === 0) return null;
  const applied = await applyAction(d1, run, config.action);
  const event = await addRunEvent(
    d1,
    run,
    "regression",
    check.regressions.map((r) => describeRegression(r, config.action)).join("; "),
    { env_id: envId, step, regressions: check.regressions, action: config.action, applied },
  );
  if (config.webhook_url) waitUntil(postWebhook(env, config.webhook_url, run, event));
  return event;
}
