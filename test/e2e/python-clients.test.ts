/**
 * Python clients that behave exactly like Atropos' BaseEnv client and example trainer (stdlib
 * only) against a real `npm run dev`: everything sent is delivered exactly once.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runExport } from "../../src/cli/export-command";
import { type DevServer, ROOT, startDevServer } from "./harness";

const run = promisify(execFile);
const script = (name: string) => join(ROOT, "test", "e2e", "python", name);

async function python(name: string, args: string[]): Promise<unknown> {
  const { stdout } = await run("python3", [script(name), ...args], {
    timeout: 60_000,
    maxBuffer: 64 << 20,
  });
  return JSON.parse(stdout);
}

interface Group {
  tokens: number[][];
  masks: number[][];
  scores: number[];
  inference_logprobs: number[][];
  overrides: Record<string, unknown>[];
}

const key = (g: Group) =>
  JSON.stringify([g.tokens, g.masks, g.scores, g.inference_logprobs, g.overrides]);

/** `export sft` from the API's default run into `out`. */
function exportOptions(api: string, out: string) {
  return {
    kind: "sft" as const,
    api,
    run: "default",
    out,
    topN: 4,
    minScoreDiff: 0,
    allowNegativeScores: false,
    saveMessages: false,
    maxRecords: 0,
    maxGroups: 0,
    tokenizer: "qwen3",
    seed: 0,
    append: false,
  };
}

describe("Atropos Python clients (stdlib only)", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("env client → API → example trainer: exact delivery of what was sent", async () => {
    const registered = (await python("atropos_trainer_client.py", [
      "register",
      server.url,
      "8",
    ])) as {
      uuid: unknown;
    };
    expect(registered.uuid).toBeDefined();

    const env = (await python("atropos_env_client.py", [server.url, "6"])) as {
      env_id: number;
      info: { batch_size: number; max_token_len: number };
      status: { current_step: number; env_weight: number };
      gzipped: number;
      sent: Group[];
    };
    expect(env.info).toEqual({ batch_size: 8, max_token_len: 2048 });
    expect(env.status.current_step).toBe(0);
    expect(env.gzipped).toBe(3); // the 120-token groups crossed 1024 bytes
    expect(env.sent).toHaveLength(6);

    const drained = (await python("atropos_trainer_client.py", ["drain", server.url])) as {
      batches: number;
      gzipped: number;
      received: Group[];
    };
    // 6 groups × 4 sequences = 3 full batches of 8.
    expect(drained.batches).toBe(3);
    // Each batch gzipped, its 120-token group sent as stored (one compressed piece), read by
    // Python's gzip module.
    expect(drained.gzipped).toBe(3);
    expect(drained.received.map(key).sort()).toEqual(env.sent.map(key).sort());

    // Nothing is delivered twice.
    const again = (await python("atropos_trainer_client.py", ["drain", server.url])) as {
      batches: number;
    };
    expect(again.batches).toBe(0);

    // The CLI export reads the same groups back, read-only.
    const out = join(mkdtempSync(join(tmpdir(), "export-api-")), "sft.jsonl");
    await runExport(exportOptions(server.url, out), () => {});
    const records = readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    // Each group has two +1 and two −1 sequences: two records per group.
    expect(records).toHaveLength(12);
    expect(records.every((r) => r.score === 1)).toBe(true);

    // A run name with no groups is almost always a typo: say so.
    const lines: string[] = [];
    const emptyOut = join(mkdtempSync(join(tmpdir(), "export-none-")), "sft.jsonl");
    await runExport({ ...exportOptions(server.url, emptyOut), run: "no-such-run" }, (line) =>
      lines.push(line),
    );
    expect(lines[0]).toContain("warning: run 'no-such-run'");
    expect(lines[0]).toContain("has no groups; check --run");
  });

  it("examples/python/lease_trainer.py (atropos_edge, stdlib only): lease → policy → ack", async () => {
    // The env client submits 6 groups of 4 first (once a trainer is registered), so all are
    // sampled under policy 0; the example then re-registers (queued groups stay) and leases 3
    // batches of 8, announcing versions 1, 2, 3 as it goes.
    await python("atropos_trainer_client.py", ["register", server.url, "8"]);
    await python("atropos_env_client.py", [server.url, "6"]);
    const trainer = run(
      "python3",
      [join(ROOT, "examples", "python", "lease_trainer.py"), server.url, "3", "8"],
      { timeout: 90_000 },
    );
    const { stdout } = await trainer;
    expect(stdout.trim().split("\n")).toEqual([
      "step 1: 8 sequences, max staleness 0, mean score 0.000",
      "step 2: 8 sequences, max staleness 1, mean score 0.000",
      "step 3: 8 sequences, max staleness 2, mean score 0.000",
    ]);
    // All three acked: nothing is left to lease.
    const res = await fetch(`${server.url}/v1/runs/default/batches/lease`, { method: "POST" });
    expect(res.status).toBe(204);
  });
});
