/** The real `wandb` package from the pip mirror, in a cached venv (for the W&B e2e tests). */
import { execFile } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { ROOT } from "./harness";

const run = promisify(execFile);
const MIRROR = ["--index-url", "file:///opt/pypi/simple"];

/**
 * A venv with wandb and what it needs, from the mirror only (pip --retries 0), built once into
 * node_modules/.cache/wandb-venv and reused (built aside, then renamed into place, so concurrent
 * test files never see half a venv). Its `bin/python` and `bin/wandb` are the real package's.
 */
export async function wandbVenv(): Promise<string> {
  const cached = join(ROOT, "node_modules", ".cache", "wandb-venv");
  if (existsSync(join(cached, ".ready"))) return cached;
  mkdirSync(dirname(cached), { recursive: true });
  const dir = mkdtempSync(`${cached}.building-`);
  await run("python3", ["-m", "venv", dir]);
  const pip = join(dir, "bin", "pip");
  const opts = { timeout: 240_000, maxBuffer: 16 << 20 };
  await run(
    pip,
    [
      "install",
      "-q",
      "--retries",
      "0",
      ...MIRROR,
      "click",
      "packaging",
      "platformdirs",
      "protobuf>=5,<8",
      "pydantic>=2.6,<3",
      "pyyaml",
      "requests<3",
      "typing-extensions",
      "xxhash",
    ],
    opts,
  );
  // wandb's OpenTelemetry requirements pin packages the mirror lacks: installed without them.
  await run(
    pip,
    [
      "install",
      "-q",
      "--retries",
      "0",
      "--no-deps",
      ...MIRROR,
      "wandb",
      "opentelemetry-api",
      "opentelemetry-sdk",
      "opentelemetry-exporter-otlp-proto-http",
      "opentelemetry-exporter-otlp-proto-common",
      "opentelemetry-proto",
    ],
    opts,
  );
  const { stdout } = await run(join(dir, "bin", "python"), [
    "-c",
    "import opentelemetry, os; print(os.path.dirname(opentelemetry.__path__[0]))",
  ]);
  cpSync(
    join(ROOT, "test", "e2e", "python", "otel_semconv_stand_in"),
    join(stdout.trim(), "opentelemetry", "semconv"),
    { recursive: true },
  );
  writeFileSync(join(dir, ".ready"), "");
  try {
    renameSync(dir, cached);
  } catch {
    // Another test file built it first: use theirs.
    rmSync(dir, { recursive: true, force: true });
  }
  return cached;
}
