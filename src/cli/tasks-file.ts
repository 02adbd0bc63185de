/** Reading a tasks file (Node side: YAML stays out of the Worker bundle). */
import { parse as parseYaml } from "yaml";
import { parseTasks, type Task } from "../core/wire/tasks";

/**
 * Parses a tasks file's text; `.jsonl` is one task per line, `.json` / `.yaml` / `.yml` a list
 * of tasks (or `{tasks: [...]}`). Errors name the file, the task and the field to fix.
 */
export function parseTasksFile(text: string, fileName: string): Task[] {
  const lower = fileName.toLowerCase();
  if (lower.endsWith(".jsonl")) {
    const lines = text.split("\n");
    const records: unknown[] = [];
    const lineOf: number[] = [];
    lines.forEach((line, i) => {
      if (line.trim() === "") return;
      try {
        records.push(JSON.parse(line));
      } catch (err) {
        throw new Error(`${fileName}:${i + 1}: not valid JSON (${(err as Error).message})`);
      }
      lineOf.push(i + 1);
    });
    return parseTasks(records, fileName, (i) => `${fileName}:${lineOf[i] ?? 1} task ${i + 1}`);
  }
  let parsed: unknown;
  try {
    parsed = lower.endsWith(".yaml") || lower.endsWith(".yml") ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new Error(`${fileName}: cannot parse (${(err as Error).message})`);
  }
  const list =
    parsed && typeof parsed === "object" && !Array.isArray(parsed) && "tasks" in parsed
      ? (parsed as { tasks: unknown }).tasks
      : parsed;
  if (!Array.isArray(list)) {
    throw new Error(`${fileName}: expected a list of tasks (or a mapping with a tasks: list)`);
  }
  return parseTasks(list, fileName);
}
