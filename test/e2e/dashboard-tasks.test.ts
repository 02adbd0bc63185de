/**
 * The envs page's "Contributed tasks" card in Chromium against a real `npm run dev` and the
 * simulator: two contributor tokens register a task and submit groups through task proxy
 * sessions; the card shows the task, its registrant, and groups and mean score per contributor
 * (as text, never as HTML).
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/sim/server";
import { launchChromium } from "./browser";
import { type DevServer, startDevServer } from "./harness";

const SCREENSHOTS = path.join(
  import.meta.dirname,
  process.env.UPDATE_SCREENSHOTS === "1"
    ? "../../docs/screenshots"
    : "../../test-results/screenshots",
);
const RUN = "default";

async function call(base: string, route: string, body: unknown, token?: string) {
  const res = await fetch(`${base}${route}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${route} → ${res.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

describe("dashboard: contributed tasks", () => {
  let server: DevServer;
  let sim: Simulator;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    browser = await launchChromium();
    [server, sim] = await Promise.all([startDevServer(), startSimulator()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await sim?.close();
  });

  it("lists the run's tasks with groups and mean score per contributor", async () => {
    const base = server.url;
    const servers = [{ base_url: `${sim.url}/v1`, server_type: "vllm", model_name: "sim-policy" }];
    const put = await fetch(`${base}/v1/runs/${RUN}/inference`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(servers),
    });
    expect(put.status).toBe(200);
    const token = async (name: string) =>
      String((await call(base, "/v1/tokens", { name, scopes: ["contributor"], run: RUN })).secret);
    const [alice, bob] = [await token("alice"), await token("<b>bob</b>")];
    await call(
      base,
      `/v1/runs/${RUN}/tasks`,
      {
        name: "security_analysis",
        difficulty: 3,
        required_tools: ["code_exec", "web_search"],
        description: "Find the vulnerabilities.",
      },
      alice,
    );
    const contribute = async (who: string, session: string, score: number) => {
      const proxy = `/v1/runs/${RUN}/proxy/${session}`;
      await call(base, `${proxy}/open`, { task: "security_analysis" }, who);
      await call(
        base,
        `${proxy}/v1/chat/completions`,
        { messages: [{ role: "user", content: "Analyze this code." }], max_tokens: 16 },
        who,
      );
      await call(base, `${proxy}/finish`, { scores: [score] }, who);
    };
    await contribute(alice, "a-1", 1);
    await contribute(alice, "a-2", 0.5);
    await contribute(bob, "b-1", 0);

    const page = browser.page;
    await page.goto(`${base}/dashboard/#/envs`);
    await page.waitForSelector("main[data-state=ready]");
    const task = page.locator('[data-testid=tasks-table] tr[data-task="security_analysis"]');
    await expect.poll(() => task.count()).toBe(3); // the task and its two contributors
    const head = task.first();
    expect(await head.locator("[data-field=difficulty]").textContent()).toBe("3");
    expect(await head.locator("[data-field=required_tools]").textContent()).toBe(
      "code_exec, web_search",
    );
    expect(await head.locator("[data-field=registered_by]").textContent()).toBe("alice");
    expect(await head.locator("[data-field=groups]").textContent()).toBe("3");
    expect(await head.locator("[data-field=mean_score]").textContent()).toBe("0.5");
    const lines = await task.locator("[data-field=contributor]").allTextContents();
    expect(lines).toEqual(["↳ alice", "↳ <b>bob</b>"]);
    const groups = await task.locator("[data-field=groups]").allTextContents();
    expect(groups).toEqual(["3", "2", "1"]);
    const means = await task.locator("[data-field=mean_score]").allTextContents();
    expect(means).toEqual(["0.5", "0.75", "0"]);
    await page.screenshot({ path: path.join(SCREENSHOTS, "tasks.png"), fullPage: true });
  });
});
