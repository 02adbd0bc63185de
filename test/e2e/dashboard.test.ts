/**
 * The dashboard in a real browser (Chromium via playwright-core, found by ./browser.ts) against a real
 * `npm run dev`: groups are fed through the Atropos wire API, batches leased and acked through
 * /v1, and every page is checked against the JSON the API serves. Screenshots of each page go to
 * test-results/screenshots/ (UPDATE_SCREENSHOTS=1 writes docs/screenshots/ for docs/DASHBOARD.md,
 * so a plain test run leaves the work tree clean).
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./browser";
import { startDevServer } from "./harness";

const SCREENSHOTS = path.join(
  import.meta.dirname,
  process.env.UPDATE_SCREENSHOTS === "1"
    ? "../../docs/screenshots"
    : "../../test-results/screenshots",
);
const RUN = "default";
const BATCH_SIZE = 8;
const MASKED = -100;
/** Model output that would execute if the dashboard ever rendered data as HTML. */
const HOSTILE_OUTPUT =
  '<script>window.__xss = "script"</script><img src=x onerror="window.__xss = \'img\'">';

type Json = Record<string, unknown>;

interface StatsJson {
  step: number;
  policy_version: number;
  queue: { groups: number; sequences: number };
  leases: { outstanding: number };
  dead_letters: { count: number };
  envs: {
    env_id: number;
    name: string;
    status: string;
    groups_submitted: number;
    sequences_submitted: number;
  }[];
}
interface GroupsJson {
  groups: { id: number | string; env_id: number | null; env_name: string | null }[];
  next_cursor: number | string | null;
}
interface BatchesJson {
  batches: {
    batch_id: number | string;
    status: string;
    num_seqs: number;
    policy_version_at_formation: number;
    groups: { policy_version: number }[];
  }[];
}

/** Same formatting as the dashboard's fmtInt. */
const int = (n: number) => Math.round(n).toLocaleString("en-US");

async function call(base: string, method: string, route: string, body?: unknown): Promise<Json> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route} → ${res.status}: ${text}`);
  return text ? (JSON.parse(text) as Json) : {};
}

/**
 * One scored group: `size` sequences of a 6-token prompt and an 8-token completion, with
 * per-token sampling logprobs and chat messages. Scores differ within the group.
 */
function scoredGroup(envId: number, size: number, seed: number, assistantText?: string): Json {
  const tokens: number[][] = [];
  const masks: number[][] = [];
  const logprobs: number[][] = [];
  const messages: Json[][] = [];
  const scores: number[] = [];
  for (let s = 0; s < size; s++) {
    const seq = Array.from({ length: 14 }, (_, j) => 100 + ((seed * 31 + s * 7 + j * 13) % 900));
    tokens.push(seq);
    masks.push(seq.map((t, j) => (j < 6 ? MASKED : t)));
    logprobs.push(seq.map((_, j) => (j < 6 ? 1 : -((seed + s + j) % 5) / 2)));
    scores.push(s % 2 === 0 ? 1 - seed / 20 : -0.5 + seed / 40);
    messages.push([
      { role: "user", content: `Question ${seed}: what is ${seed} + ${s}?` },
      { role: "assistant", content: assistantText ?? `The answer is ${seed + s}.` },
    ]);
  }
  return {
    tokens,
    masks,
    scores,
    inference_logprobs: logprobs,
    messages,
    generation_params: { temperature: 1 },
    env_id: envId,
  };
}

/** Registers a trainer and two envs, submits groups, leases two batches and acks one. */
async function seed(base: string) {
  await call(base, "POST", "/register", {
    wandb_group: "e2e",
    wandb_project: "dashboard",
    batch_size: BATCH_SIZE,
    max_token_len: 512,
    checkpoint_dir: "",
    save_checkpoint_interval: 0,
    starting_step: 0,
    num_steps: 100,
  });
  await call(base, "GET", "/batch"); // Atropos: the first pull lets envs register
  const math = await call(base, "POST", "/register-env", {
    max_token_length: 512,
    desired_name: "math",
    weight: 1,
    group_size: 4,
  });
  const code = await call(base, "POST", "/register-env", {
    max_token_length: 512,
    desired_name: "code",
    weight: 0.5,
    group_size: 2,
    min_batch_allocation: 0.25,
  });
  const mathId = Number(math.env_id);
  const codeId = Number(code.env_id);
  for (let i = 0; i < 6; i++) await call(base, "POST", "/scored_data", scoredGroup(mathId, 4, i));
  for (let i = 0; i < 5; i++)
    await call(base, "POST", "/scored_data", scoredGroup(codeId, 2, 10 + i));
  await call(base, "POST", "/scored_data", scoredGroup(mathId, 4, 99, HOSTILE_OUTPUT));
  await call(base, "POST", `/v1/runs/${RUN}/envs/${mathId}/evals`, {
    step: 0,
    metrics: { accuracy: 0.25 },
  });
  await call(base, "POST", `/v1/runs/${RUN}/envs/${mathId}/evals`, {
    step: 1,
    metrics: { accuracy: 0.5 },
  });
  const first = await call(base, "POST", `/v1/runs/${RUN}/batches/lease`, {});
  await call(base, "POST", `/v1/runs/${RUN}/batches/${first.batch_id}/ack`, {
    lease_id: first.lease_id,
  });
  // The trainer moves to policy 2 before the next lease: that batch's groups are 2 versions stale.
  await call(base, "POST", `/v1/runs/${RUN}/policy`, { version: 2 });
  const second = await call(base, "POST", `/v1/runs/${RUN}/batches/lease`, {});
  return { mathId, codeId, ackedBatch: first.batch_id, leasedBatch: second.batch_id };
}

const CURVES_RUN = "curves";
const CURVE_STEPS = 24;
const WORDS = ["The", " answer", " is", " 4", "2", "."];

/**
 * A second run with a learning curve: each step one group per env whose accuracy rises with the
 * step (math faster than code), token texts sent with each group, env metrics (drops, curriculum
 * level) at each step, an evaluation every 4 steps and a policy update every 2.
 */
async function seedCurves(base: string) {
  const root = `/runs/${CURVES_RUN}`;
  const v1 = `/v1/runs/${CURVES_RUN}`;
  await call(base, "POST", `${root}/register`, {
    wandb_group: "e2e",
    wandb_project: "curves",
    batch_size: 8,
    max_token_len: 512,
    checkpoint_dir: "",
    save_checkpoint_interval: 0,
    starting_step: 0,
    num_steps: 100,
  });
  const envs = [];
  for (const [name, rate] of [
    ["math", 1 / 16],
    ["code", 1 / 32],
  ] as const) {
    const r = await call(base, "POST", `${root}/register-env`, {
      max_token_length: 512,
      desired_name: name,
      weight: 1,
      group_size: 4,
    });
    envs.push({ id: Number(r.env_id), rate });
  }
  for (let step = 0; step < CURVE_STEPS; step++) {
    for (const env of envs) {
      const correct = Math.min(4, Math.floor(1 + step * env.rate * 4));
      const tokens = Array.from({ length: 4 }, (_, s) => [
        1,
        2,
        ...WORDS.map((_, j) => 100 + j + s + step * (3 + (s % 2))),
      ]);
      await call(base, "POST", `${root}/scored_data`, {
        tokens,
        masks: tokens.map((seq) => seq.map((t, j) => (j < 2 ? MASKED : t))),
        scores: tokens.map((_, s) => (s < correct ? 1 : -0.5 + step / 100)),
        token_texts: tokens.map(() => ["Q:", " ", ...WORDS]),
        env_id: env.id,
      });
      await call(base, "POST", `${v1}/envs/${env.id}/metrics`, {
        step,
        metrics: {
          "drops/all scores identical (N)": Math.max(0, 6 - step / 3 - env.id),
          "curriculum/level": 1 + Math.floor(step / (8 + env.id * 4)),
          response_words_mean: 12 - step / 4,
        },
      });
      if (step % 4 === 0) {
        await call(base, "POST", `${v1}/envs/${env.id}/metrics`, {
          step,
          kind: "eval",
          metrics: {
            "eval/pass@1": 0.2 + step * env.rate * 0.5,
            "eval/pass@4": 0.45 + step * env.rate * 0.6,
          },
        });
      }
    }
    if (step % 2 === 1) await call(base, "POST", `${v1}/policy`, { version: (step + 1) / 2 });
    const batch = await call(base, "POST", `${v1}/batches/lease`, {});
    await call(base, "POST", `${v1}/batches/${batch.batch_id}/ack`, { lease_id: batch.lease_id });
  }
  return envs;
}

async function open(page: Page, base: string, hash: string) {
  await page.goto(`${base}/dashboard/${hash}`);
  await page.waitForSelector("main[data-state=ready]");
}

async function screenshot(page: Page, name: string) {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

describe("dashboard in Chromium against npm run dev", () => {
  let server: Awaited<ReturnType<typeof startDevServer>>;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  let seeded: Awaited<ReturnType<typeof seed>>;
  const pageErrors: string[] = [];
  /** 404s and console errors; a missing favicon shows only as a console error. */
  const loadErrors: string[] = [];
  const api = <T>(route: string) => call(server.url, "GET", route) as Promise<T>;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    // The browser first: without one the test fails in a second, not after the server starts.
    browser = await launchChromium();
    server = await startDevServer();
    seeded = await seed(server.url);
    await seedCurves(server.url);
    page = browser.page;
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("response", (response) => {
      if (response.status() === 404) loadErrors.push(response.url());
    });
    page.on("console", (message) => {
      if (message.type() === "error") loadErrors.push(message.text());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("serves the dashboard with a fast first paint", async () => {
    const started = Date.now();
    await open(page, server.url, "#/overview");
    const loadedMs = Date.now() - started;
    const firstPaintMs = await page.evaluate(
      () => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? -1,
    );
    expect(firstPaintMs).toBeGreaterThan(0);
    expect(firstPaintMs).toBeLessThan(1000);
    expect(loadedMs).toBeLessThan(5000);
    // An icon of its own: no request for /favicon.ico, which the Worker answers 404.
    const icon = await page.locator("link[rel=icon]").getAttribute("href");
    expect(icon).toMatch(/^data:image\/svg\+xml,/);
  });

  it("is keyboard navigable with a visible focus indicator", async () => {
    await open(page, server.url, "#/overview");
    let focusedText = "";
    for (let presses = 0; presses < 10 && focusedText !== "Envs"; presses++) {
      await page.keyboard.press("Tab");
      focusedText = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");
    }
    expect(focusedText).toBe("Envs");
    const outline = await page.evaluate(() => {
      const el = document.activeElement;
      return el ? getComputedStyle(el).outlineStyle : "none";
    });
    expect(outline).not.toBe("none");
    await page.keyboard.press("Enter");
    await page.waitForURL(/#\/envs$/);
    await page.waitForSelector("main[data-route=envs][data-state=ready]");
    expect(await page.locator("nav [aria-current=page]").textContent()).toBe("Envs");
  });

  it("polls every 2 s and pauses while the tab is hidden", async () => {
    await open(page, server.url, "#/overview");
    const statsRequests: number[] = [];
    const onRequest = (request: { url(): string }) => {
      if (request.url().includes(`/v1/runs/${RUN}/stats`)) statsRequests.push(Date.now());
    };
    page.on("request", onRequest);
    try {
      await expect.poll(() => statsRequests.length, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
      const setHidden = (hidden: boolean) =>
        page.evaluate((h) => {
          Object.defineProperty(document, "hidden", { configurable: true, get: () => h });
          document.dispatchEvent(new Event("visibilitychange"));
        }, hidden);
      await setHidden(true);
      await page.waitForTimeout(300); // let a poll already in flight finish
      const whileHidden = statsRequests.length;
      await page.waitForTimeout(3000);
      expect(statsRequests.length).toBe(whileHidden);
      expect(await page.locator("#live-status").textContent()).toContain("Paused");
      await setHidden(false);
      await expect.poll(() => statsRequests.length, { timeout: 2000 }).toBeGreaterThan(whileHidden);
    } finally {
      page.off("request", onRequest);
    }
  });

  it("overview shows the run's numbers from /stats", async () => {
    await open(page, server.url, "#/overview");
    const stats = await api<StatsJson>(`/v1/runs/${RUN}/stats`);
    const kpi = (key: string) => page.locator(`[data-kpi="${key}"]`);
    await expect.poll(() => kpi("step").textContent()).toBe(int(stats.step));
    expect(stats.step).toBeGreaterThanOrEqual(2);
    await expect.poll(() => kpi("policy_version").textContent()).toBe(int(stats.policy_version));
    await expect.poll(() => kpi("queue_groups").textContent()).toBe(int(stats.queue.groups));
    await expect.poll(() => kpi("queue_sequences").textContent()).toBe(int(stats.queue.sequences));
    await expect
      .poll(() => kpi("leases_outstanding").textContent())
      .toBe(int(stats.leases.outstanding));
    expect(stats.leases.outstanding).toBe(1);
    await expect.poll(() => kpi("dead_letters").textContent()).toBe(int(stats.dead_letters.count));
    expect(await page.locator("[data-testid=queue-by-env] tbody tr").count()).toBeGreaterThan(0);
    // The throughput charts are the metrics store's batch statistics by time: the seeded batches.
    const series = await api<{ points: { delivered_batches: number; ingest_groups: number }[] }>(
      `/v1/runs/${RUN}/timeseries?minutes=15&bucket_s=10`,
    );
    const total = (key: "delivered_batches" | "ingest_groups") =>
      series.points.reduce((n, p) => n + p[key], 0);
    expect(total("delivered_batches")).toBeGreaterThanOrEqual(2);
    expect(total("ingest_groups")).toBeGreaterThan(0);
    await expect
      .poll(() => page.locator("[data-field=rates_window]").textContent())
      .toContain("batch's statistics from the metrics store");
    await page.waitForSelector(".uplot");
    await screenshot(page, "overview");
  });

  it("shows a short wait for a batch as neutral text, only a long one as a warning", async () => {
    await open(page, server.url, "#/overview");
    // A string, so that vitest leaves the page's dynamic import alone.
    const levels = await page.evaluate(`(async () => {
      const { blockedState } = await import("/dashboard/js/pages/overview.js");
      const first = blockedState("queue holds 4 of 8 sequences", null, 1000000);
      return [
        first,
        blockedState("queue holds 6 of 8 sequences", first.since, 1009999),
        blockedState("queue holds 6 of 8 sequences", first.since, 1010000),
        blockedState(null, first.since, 1010500),
      ].map((s) => s.level);
    })()`);
    expect(levels).toEqual(["waiting", "waiting", "warn", "none"]);
    // Just opened: whatever the reason, the wait has not lasted 10 s in this page yet.
    const notice = page.locator("[data-testid=blocked-reason]");
    expect(await notice.getAttribute("data-level")).not.toBe("warn");
    expect(await page.locator(".banner-warn").count()).toBe(0);
  });

  it("envs page lists every env with its counters", async () => {
    await open(page, server.url, "#/envs");
    const stats = await api<StatsJson>(`/v1/runs/${RUN}/stats`);
    const rows = page.locator("[data-testid=envs-table] tbody tr");
    await expect.poll(() => rows.count()).toBe(stats.envs.length);
    expect(stats.envs.length).toBe(2);
    for (const env of stats.envs) {
      const row = page.locator(`[data-testid=envs-table] tr[data-env-id="${env.env_id}"]`);
      expect(await row.locator("[data-field=name]").textContent()).toContain(env.name);
      expect(await row.locator("[data-field=status] .pill").textContent()).toBe(env.status);
      expect(await row.locator("[data-field=groups_submitted]").textContent()).toBe(
        int(env.groups_submitted),
      );
      expect(await row.locator("[data-field=sequences_submitted]").textContent()).toBe(
        int(env.sequences_submitted),
      );
    }
    // Evaluation results reported for the math env show up in its card.
    const mathCard = page.locator(`section.env-card[data-env-id="${seeded.mathId}"]`);
    await expect.poll(() => mathCard.locator("[data-field=accuracy]").textContent()).toBe("0.5");
    await page.waitForSelector(`section.env-card[data-env-id="${seeded.mathId}"] .uplot`);
    // Each card's score distribution is its env's latest batch, as the metrics store holds it.
    let histograms = 0;
    for (const env of stats.envs) {
      const scores = await api<{ step: number | null; samples: number }>(
        `/v1/runs/${RUN}/envs/${env.env_id}/scores`,
      );
      const note = page.locator(
        `section.env-card[data-env-id="${env.env_id}"] [data-field=score_samples]`,
      );
      if (scores.step === null) continue;
      histograms++;
      expect(scores.samples).toBeGreaterThan(0);
      await expect
        .poll(() => note.textContent())
        .toBe(`${int(scores.samples)} sequences in the batch of step ${int(scores.step)}`);
    }
    expect(histograms).toBeGreaterThan(0);
    await screenshot(page, "envs");
  });

  it("rollouts explorer lists groups, filters by env, and paginates", async () => {
    await open(page, server.url, "#/rollouts");
    const all = await api<GroupsJson>(`/v1/runs/${RUN}/groups?limit=50`);
    const rows = page.locator("[data-testid=groups-table] tbody tr[data-group-id]");
    await expect.poll(() => rows.count()).toBe(all.groups.length);
    expect(await rows.first().getAttribute("data-group-id")).toBe(String(all.groups[0]?.id));

    await page.selectOption("select[name=env_id]", String(seeded.codeId));
    await page.click("button[type=submit]");
    await page.waitForURL(new RegExp(`env_id=${seeded.codeId}`));
    await page.waitForSelector("main[data-state=ready]");
    const filtered = await api<GroupsJson>(`/v1/runs/${RUN}/groups?env_id=${seeded.codeId}`);
    expect(filtered.groups.length).toBe(5);
    await expect.poll(() => rows.count()).toBe(filtered.groups.length);
    const envCells = await rows.locator("[data-field=env]").allTextContents();
    expect(new Set(envCells)).toEqual(new Set([filtered.groups[0]?.env_name]));
    await screenshot(page, "rollouts");

    // Cursor pagination, 5 groups a page: page 2 is what the API returns for page 1's cursor.
    await open(page, server.url, "#/rollouts?limit=5");
    const page1 = await api<GroupsJson>(`/v1/runs/${RUN}/groups?limit=5`);
    const page2 = await api<GroupsJson>(
      `/v1/runs/${RUN}/groups?limit=5&cursor=${page1.next_cursor}`,
    );
    const ids = () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-group-id")));
    await expect.poll(ids).toEqual(page1.groups.map((g) => String(g.id)));
    await page.getByRole("button", { name: "Next →" }).click();
    await expect.poll(ids).toEqual(page2.groups.map((g) => String(g.id)));
    expect(await page.locator("[data-field=page]").textContent()).toBe("Page 2");
    await page.getByRole("button", { name: "← Previous" }).click();
    await expect.poll(ids).toEqual(page1.groups.map((g) => String(g.id)));
  });

  it("a rollout renders model output as text, never as markup", async () => {
    const all = await api<GroupsJson>(`/v1/runs/${RUN}/groups?env_id=${seeded.mathId}&limit=50`);
    // The hostile group was submitted last, so it is first in newest-first order.
    const hostile = all.groups[0];
    expect(hostile).toBeDefined();
    await open(page, server.url, "#/rollouts");
    await page.click(`tr[data-group-id="${hostile?.id}"] [data-field=id] a`);
    await page.waitForSelector("[data-testid=group-meta]");
    const messageTexts = await page.locator(".msg-assistant .msg-content").allTextContents();
    expect(messageTexts).toContain(HOSTILE_OUTPUT);
    expect(
      await page.locator("[data-testid=compare-left] [data-field=compare_text]").textContent(),
    ).toBe(HOSTILE_OUTPUT);
    expect(await page.locator("main img").count()).toBe(0);
    expect(await page.locator("main script").count()).toBe(0);
    expect(
      await page.evaluate(() => (window as unknown as { __xss?: string }).__xss),
    ).toBeUndefined();
    // Tokens: 6 prompt + 8 completion per sequence, shaded by mask. The best-scored sequence
    // is listed first and open.
    const detail = await api<{ payload: { scores: number[] } }>(
      `/v1/runs/${RUN}/groups/${hostile?.id}`,
    );
    const best = detail.payload.scores.indexOf(Math.max(...detail.payload.scores));
    const firstSeq = page.locator("details.seq[data-rank='0']");
    expect(await firstSeq.getAttribute("data-seq")).toBe(String(best));
    expect(await firstSeq.getAttribute("open")).not.toBeNull();
    expect(await firstSeq.locator(".tok-prompt").count()).toBe(6);
    expect(await firstSeq.locator(".tok-completion").count()).toBe(8);

    // The documented screenshot shows an ordinary rollout, not the hostile one.
    const ordinary = all.groups[1];
    await open(page, server.url, "#/rollouts");
    await page.click(`tr[data-group-id="${ordinary?.id}"] [data-field=id] a`);
    await page.waitForSelector("[data-testid=group-meta]");
    expect(await page.locator(".msg-assistant .msg-content").first().textContent()).toMatch(
      /^The answer is \d+\.$/,
    );
    await screenshot(page, "rollout");
  });

  it("curves page draws every metric of the store per env, over steps or policy versions", async () => {
    await open(page, server.url, `?run=${CURVES_RUN}#/curves`);
    const metrics = await api<{
      series: { name: string; env_id: number | null; steps: number[] }[];
    }>(`/v1/runs/${CURVES_RUN}/metrics`);
    const reward = metrics.series.filter((s) => s.name === "train/score_mean");
    expect(reward.map((s) => s.steps.length)).toEqual([CURVE_STEPS, CURVE_STEPS]);
    for (const id of ["reward", "accuracy", "completion", "drops", "curriculum", "staleness"]) {
      await page.waitForSelector(`[data-testid="${id}"] .uplot`);
      // One legend entry per env besides the x axis.
      const legend = await page
        .locator(`[data-testid="${id}"] .u-legend .u-series`)
        .allTextContents();
      expect(legend.length, id).toBe(3);
    }
    const rewardLegend = await page.locator('[data-testid="reward"] .u-legend').textContent();
    expect(rewardLegend).toContain("math");
    expect(rewardLegend).toContain("code");
    expect(await page.locator('[data-testid="reward"] p').textContent()).toBe(
      `${CURVE_STEPS} steps`,
    );
    await page.waitForSelector('[data-testid="eval:eval/pass@4"] .uplot');
    await page.waitForSelector('[data-testid="env:response_words_mean"] .uplot');
    await screenshot(page, "curves");

    // Policy versions on the x axis: 2 steps per version.
    await page.selectOption("[data-testid=curves-x-axis]", "policy_version");
    await page.waitForURL(/x=policy_version/);
    await page.waitForSelector("main[data-state=ready]");
    await page.waitForSelector('[data-testid="reward"] .uplot');
    expect(await page.locator('[data-testid="reward"] p').textContent()).toBe(
      `${CURVE_STEPS / 2 + 1} policy versions`,
    );
  });

  it("a rollout whose env sent token texts reads as text", async () => {
    const { groups } = await api<GroupsJson>(`/v1/runs/${CURVES_RUN}/groups?limit=1`);
    await open(page, server.url, `?run=${CURVES_RUN}#/rollouts/${groups[0]!.id}`);
    await page.waitForSelector("[data-testid=group-meta]");
    expect(await page.locator("button[data-mode=text]").getAttribute("aria-pressed")).toBe("true");
    expect(
      await page.locator("[data-testid=compare-left] [data-field=compare_text]").textContent(),
    ).toBe(WORDS.join(""));
    await screenshot(page, "rollout-text");
  });

  it("batches page shows leased and acked batches with manifests", async () => {
    await open(page, server.url, "#/batches");
    const { batches } = await api<BatchesJson>(`/v1/runs/${RUN}/batches`);
    expect(batches.map((b) => b.status).sort()).toEqual(["acked", "leased"]);
    const rows = page.locator("[data-testid=batches-table] tbody tr[data-batch-id]");
    await expect.poll(() => rows.count()).toBe(batches.length);
    for (const batch of batches) {
      const row = page.locator(`tr[data-batch-id="${batch.batch_id}"]`);
      expect(await row.locator("[data-field=status] .pill").textContent()).toBe(batch.status);
      expect(await row.locator("[data-field=num_seqs]").textContent()).toBe(int(batch.num_seqs));
      expect(batch.num_seqs).toBe(BATCH_SIZE);
      // Staleness as measured from the manifest, not the lease's bound.
      const versions = batch.groups.map((g) => g.policy_version);
      const stale = batch.policy_version_at_formation - Math.min(...versions);
      expect(await row.locator("[data-field=staleness]").textContent()).toBe(int(stale));
    }
    const staleness = batches.map(
      (b) => b.policy_version_at_formation - b.groups[0]!.policy_version,
    );
    expect(staleness.sort()).toEqual([0, 2]);
    const acked = page.locator(`tr[data-batch-id="${seeded.ackedBatch}"]`);
    await acked.getByRole("button", { name: "Manifest" }).click();
    const manifest = page.locator(`#manifest-${seeded.ackedBatch} tbody tr`);
    const ackedJson = batches.find((b) => String(b.batch_id) === String(seeded.ackedBatch));
    expect(await manifest.count()).toBe(ackedJson?.groups.length);
    await screenshot(page, "batches");
    expect(pageErrors).toEqual([]);
    expect(loadErrors).toEqual([]);
  });

  it("a rollout with trajectories shows each sequence's step timeline beside its tokens", async () => {
    const group = scoredGroup(seeded.mathId, 2, 7);
    const step = (n: number, error: string | null) => ({
      thought: `Step ${n}: ${HOSTILE_OUTPUT}`,
      tool_call: {
        name: n === 0 ? "calculator" : "kv_set",
        parameters: { expression: `${n} + 1` },
        result: error ? null : String(n + 1),
        error,
        latency_ms: 12,
      },
      observation: error ? `kv_set error: ${error}` : `calculator result: ${n + 1}`,
      timestamp: 1_700_000_000_000 + n * 1500,
    });
    const trajectories = [0, 1].map((sequence) => ({
      task: "Tool task: compute 0 + 1",
      steps: [step(0, null), step(1, sequence === 1 ? "store is full" : null)],
      final_response: "<answer>1</answer>",
      success: sequence === 0,
      judge_score: null,
      token_count: 14,
      wall_time_ms: 2500,
      sequence,
      source: "env",
    }));
    await call(server.url, "POST", "/scored_data", { ...group, trajectories });
    const newest = await api<GroupsJson>(`/v1/runs/${RUN}/groups?limit=1`);
    const id = newest.groups[0]?.id;
    await open(page, server.url, `#/rollouts/${id}`);
    await page.waitForSelector("[data-testid=trajectory]");
    const first = page.locator("details.seq[data-seq='0']");
    expect(await first.locator(".timeline-step").count()).toBe(2);
    expect(await first.locator(".timeline-time").allTextContents()).toEqual(["+0 s", "+1.5 s"]);
    expect(await first.locator(".timeline-thought").first().textContent()).toBe(
      `Step 0: ${HOSTILE_OUTPUT}`,
    );
    expect(await first.locator("[data-field=trajectory_success]").textContent()).toBe("true");
    // The tokens stay beside the timeline.
    expect(await first.locator(".seq-tokens .tok-completion").count()).toBe(8);
    await page.click("details.seq[data-seq='1'] summary");
    const second = page.locator("details.seq[data-seq='1']");
    expect(await second.locator(".timeline-error").textContent()).toBe("error: store is full");
    expect(await page.locator("main img").count()).toBe(0);
    expect(
      await page.evaluate(() => (window as unknown as { __xss?: string }).__xss),
    ).toBeUndefined();
    await screenshot(page, "rollout-trajectory");
  });

  it("a tool rollout reads turn by turn: calls as guess(n=32), results under them, best first", async () => {
    const turns = (guesses: number[], answer: number): Json[] => {
      const messages: Json[] = [
        { role: "system", content: "Guess the number with the guess tool." },
        { role: "user", content: "I am thinking of a number from 1 to 100." },
      ];
      guesses.forEach((n, t) => {
        // Turn 1 as OpenAI tool_calls, later turns as Hermes text: both render the same way.
        messages.push(
          t === 0
            ? {
                role: "assistant",
                content: "Start in the middle.",
                tool_calls: [
                  {
                    id: `call_${t}`,
                    type: "function",
                    function: { name: "guess", arguments: JSON.stringify({ n }) },
                  },
                ],
              }
            : {
                role: "assistant",
                content: `<tool_call>{"name": "guess", "arguments": {"n": ${n}}}</tool_call>`,
              },
          {
            role: "tool",
            tool_call_id: `call_${t}`,
            name: "guess",
            content: n < answer ? "higher" : n > answer ? "lower" : "correct",
          },
        );
      });
      messages.push({ role: "assistant", content: `<answer>${guesses.at(-1)}</answer>` });
      return messages;
    };
    const group = scoredGroup(seeded.mathId, 2, 3);
    await call(server.url, "POST", "/scored_data", {
      ...group,
      scores: [0.2, 1],
      messages: [turns([50, 25, 12], 40), turns([32, 48, 40], 40)],
    });
    const newest = await api<GroupsJson>(`/v1/runs/${RUN}/groups?limit=1`);
    await open(page, server.url, `#/rollouts/${newest.groups[0]?.id}`);
    await page.waitForSelector("[data-testid=compare-left] [data-field=compare_conversation]");
    // Best (seq 2, score 1) on the left, whole trajectory turn by turn.
    const left = page.locator("[data-testid=compare-left]");
    expect(await left.locator("[data-field=score]").textContent()).toBe("1");
    expect(await left.locator("[data-field=tool_call]").allTextContents()).toEqual([
      "guess(n=32)",
      "guess(n=48)",
      "guess(n=40)",
    ]);
    expect(await left.locator("[data-field=tool_result]").allTextContents()).toEqual([
      "→ higher",
      "→ lower",
      "→ correct",
    ]);
    expect(await left.locator(".msg-assistant .msg-role").allTextContents()).toEqual([
      "assistant · turn 1",
      "assistant · turn 2",
      "assistant · turn 3",
      "assistant · turn 4",
    ]);
    // No escaped JSON, and the answered tool messages are not repeated on their own.
    expect(await left.textContent()).not.toContain("tool_call>");
    expect(await left.textContent()).not.toContain('"arguments"');
    expect(await left.locator(".msg-tool").count()).toBe(0);
    const right = page.locator("[data-testid=compare-right]");
    expect(await right.locator("[data-field=tool_call]").first().textContent()).toBe("guess(n=50)");
    // The sequences list opens the best-scored one first, with the same compact calls.
    const first = page.locator("details.seq[data-rank='0']");
    expect(await first.getAttribute("data-seq")).toBe("1");
    expect(await first.getAttribute("open")).not.toBeNull();
    expect(await first.locator("[data-field=tool_call]").count()).toBe(3);
    expect(await page.locator("details.seq[data-rank='1']").getAttribute("open")).toBeNull();
    await screenshot(page, "rollout-tools");
  });

  it("batches page and GET /batches show which groups were replays", async () => {
    const run = "replays";
    const root = `/runs/${run}`;
    const v1 = `/v1/runs/${run}`;
    await call(server.url, "POST", `${root}/register`, {
      wandb_group: "e2e",
      wandb_project: "replays",
      batch_size: 4,
      max_token_len: 512,
      checkpoint_dir: "",
      save_checkpoint_interval: 0,
      starting_step: 0,
      num_steps: 100,
    });
    const env = await call(server.url, "POST", `${root}/register-env`, {
      max_token_length: 512,
      desired_name: "math",
      weight: 1,
      group_size: 2,
    });
    await call(server.url, "PUT", `${v1}/replay`, { enabled: true, fraction: 0.5, threshold: 0 });
    let seedNo = 0;
    for (let b = 0; b < 3; b++) {
      for (let i = 0; i < 2; i++) {
        await call(server.url, "POST", `${root}/scored_data`, {
          ...scoredGroup(Number(env.env_id), 2, seedNo++),
          scores: [1, 0.5],
        });
      }
      const lease = await call(server.url, "POST", `${v1}/batches/lease`, {});
      await call(server.url, "POST", `${v1}/batches/${lease.batch_id}/ack`, {
        lease_id: lease.lease_id,
      });
    }
    const { batches } = await api<{
      batches: {
        batch_id: string;
        num_groups: number;
        replayed_groups: number;
        groups: { id: number; replayed: boolean }[];
      }[];
    }>(`${v1}/batches`);
    const mixed = batches.find((b) => b.replayed_groups > 0);
    expect(mixed, JSON.stringify(batches)).toBeDefined();
    expect(batches.at(-1)!.replayed_groups).toBe(0);
    await open(page, server.url, `?run=${run}#/batches`);
    const row = page.locator(`tr[data-batch-id="${mixed!.batch_id}"]`);
    await row.waitFor();
    expect(await row.locator("[data-field=num_groups]").textContent()).toBe(
      `${mixed!.num_groups}${mixed!.replayed_groups} replayed`,
    );
    await row.getByRole("button", { name: "Manifest" }).click();
    const manifest = page.locator(`#manifest-${mixed!.batch_id} tbody tr`);
    const sources = await manifest.locator("[data-field=source]").allTextContents();
    expect(sources.filter((s) => s === "replay")).toHaveLength(mixed!.replayed_groups);
    expect(sources.filter((s) => s === "online")).toHaveLength(
      mixed!.groups.filter((g) => !g.replayed).length,
    );
    for (const g of mixed!.groups) {
      const manifestRow = page.locator(`#manifest-${mixed!.batch_id} tr[data-group-id="${g.id}"]`);
      expect(await manifestRow.getAttribute("data-replayed")).toBe(String(g.replayed));
    }
    await screenshot(page, "batches-replays");
  });

  it("pauses and resumes an env from the envs page", async () => {
    const POLL = { timeout: 6000 };
    await open(page, server.url, "#/envs");
    const row = () => page.locator(`[data-testid=envs-table] tr[data-env-id="${seeded.mathId}"]`);
    const paused = async () =>
      (
        await api<{ envs: { env_id: number; paused: boolean }[] }>(`/v1/runs/${RUN}/stats`)
      ).envs.find((e) => e.env_id === seeded.mathId)?.paused;
    await row().locator("button[data-action=pause]").click();
    await expect.poll(paused).toBe(true);
    // The table shows it at the next poll (every 2 s).
    await expect.poll(() => row().locator("[data-field=paused]").count(), POLL).toBe(1);
    await row().locator("button[data-action=resume]").click();
    await expect.poll(paused).toBe(false);
    await expect.poll(() => row().locator("[data-field=paused]").count(), POLL).toBe(0);
  });

  it("overview lists run events: a regression found by the guard", async () => {
    const route = `/v1/runs/${RUN}/envs/${seeded.mathId}/evals`;
    await call(server.url, "POST", route, { step: 1000, metrics: { guard_probe: 1 } });
    await call(server.url, "POST", route, { step: 1001, metrics: { guard_probe: 0.5 } });
    await open(page, server.url, "#/overview");
    const events = page.locator("[data-testid=run-events] li.run-event");
    await expect.poll(() => events.count(), { timeout: 6000 }).toBeGreaterThan(0);
    expect(await events.first().textContent()).toContain(
      "guard_probe = 0.5 at step 1001 fell below",
    );
  });
});

describe("dashboard on a deployment with an API token", () => {
  const TOKEN = "e2e-dashboard-token";
  let server: Awaited<ReturnType<typeof startDevServer>>;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    browser = await launchChromium();
    server = await startDevServer({ vars: { API_TOKEN: TOKEN } });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it("asks for the token on 401, rejects a wrong one, and keeps it in sessionStorage only", async () => {
    const { page } = browser;
    const bearer: (string | null)[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/v1/runs/default/stats"))
        bearer.push(request.headers().authorization ?? null);
    });
    await page.goto(`${server.url}/dashboard/#/overview`);
    const dialog = page.locator("#token-dialog");
    await dialog.waitFor({ state: "visible" });
    expect(await page.locator("main").getAttribute("data-state")).not.toBe("ready");

    await page.fill("#token-input", "wrong-token");
    await page.click("#token-dialog button[type=submit]");
    await page.locator("#token-error").waitFor({ state: "visible" });
    expect(await page.locator("#token-error").textContent()).toContain("rejected");

    await page.fill("#token-input", TOKEN);
    await page.click("#token-dialog button[type=submit]");
    await page.waitForSelector("main[data-state=ready]");
    expect(await dialog.isVisible()).toBe(false);
    expect(bearer).toContain(`Bearer ${TOKEN}`);
    const storage = await page.evaluate(() => ({
      session: Object.values({ ...sessionStorage }),
      local: Object.keys({ ...localStorage }),
    }));
    expect(storage.session).toContain(TOKEN);
    expect(storage.local).toEqual([]);
  });
});
