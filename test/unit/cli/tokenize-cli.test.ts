/** `atropos-edge tokenizers --json` and `atropos-edge tokenize` run as the real CLI. */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TINY_DIR = path.join(ROOT, "test/fixtures/tokenizers/tiny");
const cacheDir = mkdtempSync(path.join(tmpdir(), "tokenize-cli-"));

function cli(
  args: string[],
  stdin = "",
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "src/cli/main.ts"), ...args],
      { cwd: ROOT, env: { ...process.env, ATROPOS_EDGE_CACHE_DIR: cacheDir }, timeout: 120_000 },
      (error, stdout, stderr) => {
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
    child.stdin?.end(stdin);
  });
}

const fixture = (name: string) =>
  JSON.parse(readFileSync(path.join(ROOT, `test/fixtures/tokenizers/${name}.json`), "utf8"));

describe("atropos-edge tokenizers --json", () => {
  it("lists every bundled family with absolute paths of plain files other tools can open", async () => {
    const result = await cli(["tokenizers", "--json"]);
    expect(result.code).toBe(0);
    const entries = JSON.parse(result.stdout) as {
      name: string;
      tokenizer_json: string;
      tokenizer_config: string;
    }[];
    expect(entries.map((e) => e.name)).toEqual([
      "qwen2_5",
      "qwen3",
      "llama3",
      "llama3_2",
      "gemma3",
      "deepseek_v3",
      "mistral_nemo",
    ]);
    for (const entry of entries) {
      for (const file of [entry.tokenizer_json, entry.tokenizer_config]) {
        expect(path.isAbsolute(file) && file.startsWith(cacheDir) && existsSync(file)).toBe(true);
      }
      const json = JSON.parse(readFileSync(entry.tokenizer_json, "utf8"));
      expect(json.model.type).toBe("BPE");
      expect(typeof JSON.parse(readFileSync(entry.tokenizer_config, "utf8")).chat_template).toBe(
        "string",
      );
    }
  });
});

describe("atropos-edge tokenize", () => {
  it("prints ids for text and rendered text + ids for messages, one line per input", async () => {
    const golden = fixture("qwen3");
    const text = golden.texts[60];
    const chat = golden.chats.find((c: { tools?: unknown }) => c.tools);
    const input = [
      JSON.stringify({ text: text.text }),
      JSON.stringify({ messages: chat.messages, tools: chat.tools }),
      "",
    ].join("\n");
    const result = await cli(["tokenize", "--tokenizer", "Qwen/Qwen3-8B"], input);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([{ ids: text.ids }, { text: chat.text, ids: chat.ids }]);
  });

  it("reads a user directory; a bad line gets an error line and exit code 1", async () => {
    const golden = fixture("tiny");
    const input = `${JSON.stringify({ text: golden.texts[0].text })}\nnot json\n{"x":1}\n${JSON.stringify({ messages: golden.chats[0].messages })}\n`;
    const result = await cli(["tokenize", "--tokenizer", TINY_DIR], input);
    expect(result.code).toBe(1);
    const lines = result.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0]).toEqual({ ids: golden.texts[0].ids });
    expect(lines[1].error).toMatch(/each line must be JSON/);
    expect(lines[2].error).toMatch(/needs "text".*or "messages"/);
    expect(lines[3]).toEqual({ text: golden.chats[0].text, ids: golden.chats[0].ids });
  });

  it("fails clearly on an unknown tokenizer", async () => {
    const result = await cli(["tokenize", "--tokenizer", "nope"], "");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/No tokenizer "nope"/);
  });
});
