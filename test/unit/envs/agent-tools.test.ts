/**
 * agent_tasks' tools: web_search over the bundled corpus (BM25) and over a search API on a real
 * local HTTP server, and the book's tool list (python_exec, web_search, file_ops) in an episode on
 * the inference simulator, with Python really run in the local sandbox.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnv, type InferenceHandle, openInference } from "../../../src/cli/inference";
import type { ScoredDataGroup } from "../../../src/core/wire/group-types";
import { processEnv } from "../../../src/env-sdk/runtime/process";
import { createAgentTasksEnv } from "../../../src/envs/agent-tasks";
import { searchCorpus } from "../../../src/envs/data/search-corpus";
import { AGENT_TOOL_NAMES, agentToolbox } from "../../../src/envs/tools/agent-tools";
import {
  corpusSearch,
  WebSearchConfigSchema,
  webSearchTool,
} from "../../../src/envs/tools/web-search";
import { createLocalSandbox } from "../../../src/sandbox/node/local-sandbox";
import { setSandboxProvider } from "../../../src/sandbox/registry";

describe("web_search, offline (BM25 over the bundled corpus)", () => {
  it("bundles at least 200 distinct documents", () => {
    const docs = searchCorpus();
    expect(docs.length).toBeGreaterThanOrEqual(200);
    expect(new Set(docs.map((d) => d.id)).size).toBe(docs.length);
    expect(new Set(docs.map((d) => d.url)).size).toBe(docs.length);
  });

  it("ranks the document that answers the query first", async () => {
    const top = async (q: string) => (await corpusSearch().search(q, 3))[0]?.title;
    expect(await top("What is the capital of Kenya?")).toBe("Kenya (country)");
    expect(await top("element with atomic number 79")).toBe("Gold (chemical element)");
    expect(await top("chemical symbol Fe")).toBe("Iron (chemical element)");
    expect(await top("group relative advantage without a value network")).toBe(
      "Group Relative Policy Optimization",
    );
    expect(await corpusSearch().search("zzzqqq xyzzy", 3)).toEqual([]);
  });

  it("the tool returns numbered results, at most max_results, and refuses an empty query", async () => {
    const config = WebSearchConfigSchema.parse({ backend: "bm25", max_results: 2 });
    const tool = webSearchTool(config, 1000);
    const out = await tool.run({ query: "capital city currency euro", max_results: 9 });
    expect(out).toMatch(/^1\. .+ \(https:\/\/corpus\.atropos-edge\.local\/countries\/.+\)\n/);
    expect(out).toContain("\n\n2. ");
    expect(out).not.toContain("\n\n3. ");
    await expect(Promise.resolve().then(() => tool.run({ query: " " }))).rejects.toThrow(
      /'query' must be a non-empty string/,
    );
  });
});

describe("web_search against a search API (backend: http)", () => {
  let server: Server;
  let base = "";
  const seen: { url: string; token: string | undefined }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? "", token: req.headers["x-subscription-token"] as string });
      const q = new URL(req.url ?? "/", "http://x").searchParams.get("q") ?? "";
      if (req.url?.startsWith("/down")) {
        res.writeHead(503).end();
        return;
      }
      const hit = { title: `About ${q}`, url: "https://example.org/a", description: `All on ${q}` };
      const body = req.url?.startsWith("/brave")
        ? { web: { results: [hit, hit, hit] } }
        : { results: [{ title: `About ${q}`, url: "https://example.org/s", content: "searx" }] };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it("reads SearXNG's and Brave's answer layouts, sending the configured headers", async () => {
    const searx = webSearchTool(
      WebSearchConfigSchema.parse({
        backend: "http",
        url: `${base}/search?q={query}&format=json`,
      }),
      2000,
    );
    expect(await searx.run({ query: "tide pools" })).toBe(
      "1. About tide pools (https://example.org/s)\nsearx",
    );
    expect(seen.at(-1)?.url).toBe("/search?q=tide%20pools&format=json");
    const brave = webSearchTool(
      WebSearchConfigSchema.parse({
        backend: "http",
        url: `${base}/brave?q={query}&count={k}`,
        headers: { "X-Subscription-Token": "tok" },
        results_path: "web.results",
        max_results: 2,
      }),
      2000,
    );
    const out = await brave.run({ query: "bm25" });
    expect(out).toBe(
      "1. About bm25 (https://example.org/a)\nAll on bm25\n\n2. About bm25 (https://example.org/a)\nAll on bm25",
    );
    expect(seen.at(-1)).toEqual({ url: "/brave?q=bm25&count=2", token: "tok" });
  });

  it("an API that fails is a tool error the episode sees, and a URL without {query} is refused", async () => {
    const down = agentToolbox(
      {
        tool_timeout_ms: 1000,
        code_timeout_ms: 1000,
        code_memory_mb: 64,
        search_timeout_ms: 2000,
        web_search: WebSearchConfigSchema.parse({ backend: "http", url: `${base}/down?q={query}` }),
      },
      ["web_search"],
    );
    expect(await down.call("web_search", { query: "x" })).toMatchObject({
      result: null,
      error: "search API answered HTTP 503",
    });
    expect(
      WebSearchConfigSchema.safeParse({ backend: "http", url: `${base}/search` }).error?.issues[0]
        ?.message,
    ).toBe("url must contain {query}");
  });
});

describe("agent_tasks with the book's tools", () => {
  let inference: InferenceHandle;
  const sandbox = createLocalSandbox({ python: { size: 1, maxConcurrent: 2 } });

  beforeAll(async () => {
    setSandboxProvider(() => sandbox);
    inference = await openInference({
      serverType: "vllm",
      model: "sim-policy",
      tokenizer: "qwen3",
      simLatencyMs: 0,
      simSeed: 0,
    });
  });
  afterAll(async () => {
    setSandboxProvider(null);
    await Promise.all([inference?.close(), sandbox.close?.()]);
  });

  it("offers python_exec, web_search and file_ops, and names every known tool when one is unknown", async () => {
    expect(AGENT_TOOL_NAMES).toEqual(
      expect.arrayContaining(["python_exec", "js_exec", "file_ops", "web_search", "calculator"]),
    );
    const task = {
      id: "t",
      task_type: "qa",
      difficulty: 1,
      prompt: "p",
      evaluation: { kind: "reference", answer: "1" },
    };
    await expect(
      createEnv(createAgentTasksEnv(), { tasks: [task], tools: ["shell"] }, inference, "qwen3"),
    ).rejects.toThrow(
      /unknown tool shell \(this env provides calculator, kv_set, kv_get, python_exec, js_exec, file_ops, web_search\)/,
    );
  });

  it("python_exec runs in the sandbox and shares the episode's scratch files with file_ops", async () => {
    const box = agentToolbox(
      {
        tool_timeout_ms: 1000,
        code_timeout_ms: 20_000,
        code_memory_mb: 128,
        search_timeout_ms: 1000,
        web_search: { backend: "bm25", max_results: 3 },
      },
      ["python_exec", "file_ops"],
    );
    expect(await box.call("file_ops", { op: "write", path: "n.txt", content: "21" })).toMatchObject(
      { result: "ok" },
    );
    const run = await box.call("python_exec", {
      code: "n = int(open('n.txt').read())\nopen('out.txt', 'w').write(str(n * 2))\nprint(n * 2)",
    });
    expect(run).toMatchObject({ result: "42", error: null });
    expect(await box.call("file_ops", { op: "read", path: "out.txt" })).toMatchObject({
      result: "42",
    });
  }, 60_000);

  it("an episode calls web_search on the corpus and answers from it", async () => {
    const env = await createEnv(
      createAgentTasksEnv(),
      {
        group_size: 2,
        tools: ["python_exec", "web_search", "file_ops"],
        tasks: [
          {
            id: "capital-kenya",
            task_type: "qa",
            difficulty: 1,
            prompt: "What is the capital of Kenya?",
            required_tools: ["web_search"],
            evaluation: { kind: "reference", answer: "Nairobi", match: "contains" },
          },
        ],
      },
      inference,
      "qwen3",
    );
    const groups: ScoredDataGroup[] = [];
    await processEnv(env, { groups: 2, onGroup: (g) => void groups.push(g) });
    const steps = groups.flatMap((g) => g.trajectories!.flatMap((t) => t.steps));
    const search = steps.find((s) => s.tool_call?.name === "web_search");
    expect(search?.tool_call?.parameters).toEqual({ query: "What is the capital of Kenya?" });
    expect(search?.tool_call?.result).toMatch(
      /^1\. Kenya \(country\) .*\nKenya is a country in Africa\. Its capital city is Nairobi/,
    );
  }, 60_000);
});
