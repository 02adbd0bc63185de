/**
 * The newcomer's path, timed: `npm pack` this package, `atropos-edge init` a project in a temp
 * folder with the packed package's own CLI, install it from the npm cache only, add a brand-new
 * env (not one of the examples), run the project's tests (Workers pool), check its `npm run dev`
 * (API, dashboard, its envs registered), train on the new env with `start`'s loop until 3
 * batches are leased and acked, run the scaffold's `npm start` for one step, run the new env once
 * more on the Worker's queue path (`start --workers`), and `wrangler deploy --dry-run`. Nothing
 * is edited inside node_modules or this repository.
 *
 *   npm run bench:newcomer        prints each phase's time (docs/WRITING_ENVS.md quotes them)
 *
 * test/e2e/user-project.test.ts runs the same path and checks every phase's outcome.
 */
import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "./ports.mjs";

const ROOT = resolve(import.meta.dirname, "..");

/** The env a newcomer writes: is a word a palindrome? Only the public API. */
export const PALINDROME_ENV = `import {
  BaseEnv,
  BaseEnvConfigSchema,
  defineEnv,
  type JsonObject,
  mergeIntoGroup,
  SeededRng,
  sampleChat,
  scoredItemFromNode,
  z,
} from "atropos-edge";

const WORDS = ["level", "rotor", "banana", "kayak", "apple", "civic", "orange", "refer"];
type Item = { word: string };
type Config = z.output<typeof BaseEnvConfigSchema>;

const question = (item: Item) => \`Is "\${item.word}" a palindrome? Answer yes or no.\`;
const isPalindrome = (word: string) => [...word].reverse().join("") === word;

export function scorePalindrome(item: Item, answer: string): number {
  const said = answer.trim().toLowerCase().startsWith("yes");
  return said === isPalindrome(item.word) ? 1 : 0;
}

class PalindromeEnv extends BaseEnv<Item, Config> {
  static override envName = "palindrome";
  private rng = new SeededRng(7);

  override async getNextItem(): Promise<Item> {
    return { word: this.rng.pick(WORDS) };
  }

  override async collectTrajectories(item: Item) {
    const messages = [{ role: "user", content: question(item) }];
    const choices = await sampleChat(this.inference, this.tokenizer, messages, {
      n: this.config.group_size,
      max_tokens: 8,
    });
    const rollouts = choices.map((c) =>
      scoredItemFromNode(c.node, scorePalindrome(item, c.text), {
        tokenizer: this.tokenizer,
        messages: c.messages,
      }),
    );
    return [mergeIntoGroup(rollouts), []] as const satisfies [unknown, Item[]];
  }

  override saveCheckpoint(): JsonObject {
    return { rng: this.rng.state };
  }

  override loadCheckpoint(state: JsonObject): void {
    if (typeof state.rng === "number") this.rng = new SeededRng(state.rng);
  }
}

export default defineEnv(PalindromeEnv, BaseEnvConfigSchema, "Is a word a palindrome?", {
  simulate: (item: Item) => ({
    match: question(item),
    candidates: [
      { text: isPalindrome(item.word) ? "yes" : "no", label: "right" },
      { text: isPalindrome(item.word) ? "no" : "yes", label: "wrong" },
    ],
  }),
});
`;

const PALINDROME_TEST = `import { describe, expect, it } from "vitest";
import palindrome, { scorePalindrome } from "../src/envs/palindrome";

describe("palindrome env", () => {
  it("scores yes/no against the word", () => {
    expect(scorePalindrome({ word: "level" }, "Yes.")).toBe(1);
    expect(scorePalindrome({ word: "level" }, "no")).toBe(0);
    expect(scorePalindrome({ word: "apple" }, "no")).toBe(1);
    expect(palindrome.name).toBe("palindrome");
  });
});
`;

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<CommandResult> {
  return new Promise((done) => {
    execFile(
      cmd,
      args,
      {
        cwd,
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", FORCE_COLOR: "0" },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        done({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/** What the project's `npm run dev` answered while it ran. */
export interface DevCheck {
  /** GET / (Atropos' root). */
  root: { status: number; body: unknown };
  /** GET /dashboard/ (the dashboard the package ships, served from node_modules). */
  dashboard: { status: number; contentType: string };
  /** Starting an env worker for the project's env, and for an env the Worker does not register. */
  ownEnv: { status: number; body: unknown };
  unknownEnv: { status: number; body: unknown };
  /** After SIGTERM to the process group: every process exited and the port refuses connections. */
  stopped: boolean;
  output: string;
}

/**
 * The project's `npm run dev` on a free port: waits for "ready", asks the API, the dashboard and
 * the env-worker route (which knows exactly the envs the project's Worker registers), then stops
 * the whole process group it started.
 */
async function checkDevServer(project: string, timeoutMs: number): Promise<DevCheck> {
  const port = await freePort();
  const child = spawn("npm", ["run", "dev", "--", "--port", String(port)], {
    cwd: project,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", FORCE_COLOR: "0" },
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGTERM");
    return exited;
  };
  try {
    const deadline = Date.now() + timeoutMs;
    while (!/dev: ready on /.test(output)) {
      if (child.exitCode !== null) throw new Error(`npm run dev exited early:\n${output}`);
      if (Date.now() > deadline) throw new Error(`npm run dev was not ready in time:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const base = `http://127.0.0.1:${port}`;
    const root = await fetch(`${base}/`);
    const dashboard = await fetch(`${base}/dashboard/`);
    await dashboard.arrayBuffer();
    const startEnv = async (env: string) => {
      const res = await fetch(`${base}/v1/runs/newcomer-dev/env-workers`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        // No trainer registers in this run, so the env worker waits and never calls inference.
        body: JSON.stringify({ env, inference: [{ base_url: "http://127.0.0.1:9/v1" }] }),
      });
      return { status: res.status, body: (await res.json()) as unknown };
    };
    const ownEnv = await startEnv("palindrome");
    const unknownEnv = await startEnv("no_such_env");
    await fetch(`${base}/v1/runs/newcomer-dev/env-workers/palindrome/0/stop`, { method: "POST" });
    const rootBody = (await root.json()) as unknown;
    await stop();
    // The group's other processes (the runtime) may take a moment after npm itself has exited.
    let refused = false;
    for (let i = 0; i < 50 && !refused; i++) {
      refused = await fetch(`${base}/`).then(
        () => false,
        () => true,
      );
      if (!refused) await new Promise((r) => setTimeout(r, 200));
    }
    return {
      root: { status: root.status, body: rootBody },
      dashboard: {
        status: dashboard.status,
        contentType: dashboard.headers.get("content-type") ?? "",
      },
      ownEnv,
      unknownEnv,
      stopped: refused,
      output,
    };
  } finally {
    await stop();
  }
}

export interface NewcomerPhase {
  name: string;
  seconds: number;
  result: CommandResult;
}

export interface NewcomerRun {
  project: string;
  phases: NewcomerPhase[];
  /** `npm start`'s --summary-json (per-step accuracy, policy versions). */
  summary: { envs: Record<string, { steps: unknown[] }>; policy_versions: { announced: number } };
  dev: DevCheck;
  bundle: string;
}

/** The tool env of docs/WRITING_ENVS.md (section 7), exactly as a newcomer would copy it. */
export function docsToolEnv(): string {
  const doc = readFileSync(join(ROOT, "docs", "WRITING_ENVS.md"), "utf8");
  const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const env = blocks.find((block) => block.includes('envName = "number_guess"'));
  if (!env) throw new Error("docs/WRITING_ENVS.md no longer shows the number_guess tool env");
  return env;
}

/** Walks the whole path; stops at the first phase that fails (its result says why). */
export async function runNewcomerPath(
  options: { workDir?: string; steps?: number; log?: (line: string) => void } = {},
): Promise<NewcomerRun> {
  const log = options.log ?? (() => {});
  const work = options.workDir ?? mkdtempSync(join(tmpdir(), "atropos-edge-newcomer-"));
  const project = join(work, "my-rl-project");
  const phases: NewcomerPhase[] = [];
  const phase = async (name: string, cmd: string, args: string[], cwd: string, limitS: number) => {
    const t0 = performance.now();
    const result = await run(cmd, args, cwd, limitS * 1000);
    const seconds = (performance.now() - t0) / 1000;
    phases.push({ name, seconds, result });
    log(`${name.padEnd(9)} ${seconds.toFixed(1)} s (exit ${result.code})`);
    if (result.code !== 0) {
      throw new Error(`${name} failed (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
    }
    return result;
  };

  mkdirSync(join(work, "pack"), { recursive: true });
  const packed = await phase(
    "pack",
    "npm",
    ["pack", "--pack-destination", join(work, "pack")],
    ROOT,
    120,
  );
  const tarball = join(work, "pack", packed.stdout.trim().split("\n").at(-1)!.trim());
  // init runs from the packed package, as a user's `npx atropos-edge init` would: its files come
  // from the tarball (templates, the shipped lockfile), its dependencies (the same pinned
  // versions) from this checkout's node_modules, outside the project's folder tree.
  const unpacked = join(mkdtempSync(join(tmpdir(), "atropos-edge-packed-")), "lib", "atropos-edge");
  mkdirSync(unpacked, { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(unpacked, "..", "..", "node_modules"), "dir");
  await phase("unpack", "tar", ["-xzf", tarball, "-C", unpacked, "--strip-components=1"], work, 60);
  await phase(
    "init",
    process.execPath,
    [
      join(unpacked, "bin", "atropos-edge.mjs"),
      "init",
      project,
      "--atropos-edge",
      `file:${tarball}`,
    ],
    work,
    60,
  );
  await phase("install", "npm", ["install", "--offline", "--no-audit", "--no-fund"], project, 300);

  // The newcomer's own env, registered next to the example in the project's Worker.
  writeFileSync(join(project, "src", "envs", "palindrome.ts"), PALINDROME_ENV);
  writeFileSync(join(project, "test", "palindrome.test.ts"), PALINDROME_TEST);
  // The docs' tool env: `npm test` type-checks it, the `tool-env` phase runs it.
  writeFileSync(join(project, "src", "envs", "number-guess.ts"), docsToolEnv());
  const entry = join(project, "src", "index.ts");
  writeFileSync(
    entry,
    readFileSync(entry, "utf8")
      .replace(
        'import addition from "./envs/addition";',
        'import addition from "./envs/addition";\nimport palindrome from "./envs/palindrome";',
      )
      .replace("envs: [addition]", "envs: [addition, palindrome]"),
  );

  await phase("test", "npm", ["test"], project, 300);
  const devStart = performance.now();
  const dev = await checkDevServer(project, 120_000);
  const devSeconds = (performance.now() - devStart) / 1000;
  phases.push({
    name: "dev",
    seconds: devSeconds,
    result: { code: 0, stdout: dev.output, stderr: "" },
  });
  log(`${"dev".padEnd(9)} ${devSeconds.toFixed(1)} s`);
  const summaryPath = join(project, "summary.json");
  await phase(
    "start",
    "npx",
    [
      "atropos-edge",
      "start",
      "--env",
      "./src/envs/palindrome.ts",
      "--steps",
      String(options.steps ?? 3),
      "--batch-size",
      "16",
      "--port",
      String(await freePort()),
      "--summary-json",
      summaryPath,
      "--max-seconds",
      "240",
    ],
    project,
    300,
  );
  await phase(
    "tool-env",
    "npx",
    [
      "atropos-edge",
      "process",
      "--env",
      "./src/envs/number-guess.ts",
      "--groups",
      "2",
      "--out",
      "data/number-guess.jsonl",
    ],
    project,
    120,
  );
  // The scaffold's own `npm start` (its example env), one step.
  await phase(
    "npm-start",
    "npm",
    [
      "start",
      "--",
      "--steps",
      "1",
      "--batch-size",
      "8",
      "--port",
      String(await freePort()),
      "--max-seconds",
      "120",
    ],
    project,
    180,
  );
  // The same env on the Worker's queue path: EnvFeeder DO, queue consumers, the Worker bundled
  // with an entry that registers it.
  await phase(
    "workers",
    "npx",
    [
      "atropos-edge",
      "start",
      "--workers",
      "--envs",
      "./src/envs/palindrome.ts",
      "--steps",
      "2",
      "--batch-size",
      "8",
      "--port",
      String(await freePort()),
      "--max-seconds",
      "240",
    ],
    project,
    300,
  );
  await phase(
    "deploy",
    "npm",
    ["run", "deploy", "--", "--dry-run", "--outdir", "dist"],
    project,
    180,
  );
  return {
    project,
    phases,
    summary: JSON.parse(readFileSync(summaryPath, "utf8")),
    dev,
    bundle: readFileSync(join(project, "dist", "index.js"), "utf8"),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const t0 = performance.now();
  const result = await runNewcomerPath({ log: (line) => console.log(line) });
  const total = (performance.now() - t0) / 1000;
  const toFirstBatch = result.phases
    .filter((p) => ["init", "install", "test", "start"].includes(p.name))
    .reduce((sum, p) => sum + p.seconds, 0);
  console.log(
    `init → ${result.summary.policy_versions.announced} acked batches: ${toFirstBatch.toFixed(1)} s`,
  );
  console.log(
    `whole path (pack … deploy dry-run): ${total.toFixed(1)} s; project: ${result.project}`,
  );
}
