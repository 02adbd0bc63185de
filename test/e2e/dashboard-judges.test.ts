/**
 * The group page's Judges card in Chromium against a real `npm run dev`: a group submitted with a
 * judge panel's report in `group_overrides.judge` shows per-judge scores, the panel score, the
 * judges' agreement and their failures (as text, never as HTML).
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JudgeReport } from "../../src/core/wire/judge-schemas";
import { launchChromium } from "./browser";
import { startDevServer } from "./harness";

const SCREENSHOTS = path.join(
  import.meta.dirname,
  process.env.UPDATE_SCREENSHOTS === "1"
    ? "../../docs/screenshots"
    : "../../test-results/screenshots",
);

async function call(base: string, method: string, route: string, body?: unknown) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route} → ${res.status}: ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

const report: JudgeReport = {
  mode: "pointwise",
  judges: ["judge-a", "judge-strict", "judge-broken"],
  scores: [
    [0.81, 0.22, 0.77, 0.2],
    [0.86, 0.18, 0.8, 0.15],
    [null, null, null, null],
  ],
  panel: [0.835, 0.2, 0.785, 0.175],
  failures: [0, 1, 2, 3].map((answer) => ({
    judge: "judge-broken",
    answer,
    reason: '<img src=x onerror="window.__xss=1"> answered 404',
  })),
  kendall_tau: 1,
  calibrated: ["judge-a", "judge-strict"],
  calls: 12,
};

describe("dashboard: a judged group", () => {
  let server: Awaited<ReturnType<typeof startDevServer>>;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    browser = await launchChromium();
    server = await startDevServer();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("shows per-judge scores, the panel score, Kendall's tau and the failures", async () => {
    const base = server.url;
    await call(base, "POST", "/register", {
      wandb_group: "e2e",
      wandb_project: "judges",
      batch_size: 8,
      max_token_len: 512,
      checkpoint_dir: "",
      save_checkpoint_interval: 0,
      starting_step: 0,
      num_steps: 10,
    });
    await call(base, "GET", "/batch");
    const env = await call(base, "POST", "/register-env", {
      max_token_length: 512,
      desired_name: "agent_tasks",
      weight: 1,
      group_size: 4,
    });
    const seq = (i: number) => Array.from({ length: 10 }, (_, j) => 100 + i * 10 + j);
    await call(base, "POST", "/scored_data", {
      tokens: [0, 1, 2, 3].map(seq),
      masks: [0, 1, 2, 3].map((i) => seq(i).map((t, j) => (j < 4 ? -100 : t))),
      scores: report.panel,
      env_id: Number(env.env_id),
      group_overrides: { task_id: "explain-backoff", difficulty: 3, judge: report },
    });
    const groups = (await call(base, "GET", "/v1/runs/default/groups")) as {
      groups: { id: string | number }[];
    };
    const id = groups.groups[0]!.id;

    const page = browser.page;
    await page.goto(`${base}/dashboard/#/rollouts/${id}`);
    await page.waitForSelector("main[data-state=ready]");
    const summary = await page.locator("[data-testid=judge-summary]").textContent();
    expect(summary).toBe(
      "pointwise · 3 judges · 12 calls · agreement (Kendall's tau) 1 · 4 failures",
    );
    const rows = page.locator("[data-testid=judge-scores] tbody tr");
    expect(await rows.count()).toBe(4);
    expect(await rows.nth(0).textContent()).toContain("judge-a (calibrated)");
    expect(await rows.nth(1).locator("td").nth(1).textContent()).toBe("0.86");
    expect(await rows.nth(2).locator(".pill").allTextContents()).toEqual([
      "failed",
      "failed",
      "failed",
      "failed",
    ]);
    expect(await rows.nth(3).textContent()).toContain("panel (trimmed mean)0.835");
    // Failure reasons are text: the hostile markup is shown, not run.
    expect(await page.getByText('<img src=x onerror="window.__xss=1"> answered 404').count()).toBe(
      4,
    );
    expect(await page.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined();
    await page.screenshot({ path: path.join(SCREENSHOTS, "judges.png"), fullPage: true });
  });
});
