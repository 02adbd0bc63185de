/** The calculator task's tools: calculator + kv_get/kv_set over a per-episode store. */
import type { Tool } from "../../sdk/env";
import { calculate, formatNumber } from "./calculator";

/** calculator + kv_get/kv_set over a per-episode store. */
export function standardTools(store: Map<string, string>, timeoutMs = 1000): Record<string, Tool> {
  const str = (v: unknown, what: string) => {
    if (typeof v !== "string" && typeof v !== "number")
      throw new Error(`'${what}' must be a string`);
    return String(v);
  };
  return {
    calculator: {
      timeoutMs,
      definition: {
        type: "function",
        function: {
          name: "calculator",
          description:
            "Evaluate an arithmetic expression (+ - * / % ^, parentheses, sqrt, min, max…).",
          parameters: {
            type: "object",
            properties: { expression: { type: "string" } },
            required: ["expression"],
          },
        },
      },
      run: (args) => formatNumber(calculate(str(args.expression, "expression"))),
    },
    kv_set: {
      timeoutMs,
      definition: {
        type: "function",
        function: {
          name: "kv_set",
          description: "Store a value under a key.",
          parameters: {
            type: "object",
            properties: { key: { type: "string" }, value: { type: "string" } },
            required: ["key", "value"],
          },
        },
      },
      run: (args) => {
        const key = str(args.key, "key");
        if (store.size >= 100 && !store.has(key)) throw new Error("store is full");
        store.set(key, str(args.value, "value").slice(0, 1000));
        return "ok";
      },
    },
    kv_get: {
      timeoutMs,
      definition: {
        type: "function",
        function: {
          name: "kv_get",
          description: "Read the value stored under a key.",
          parameters: {
            type: "object",
            properties: { key: { type: "string" } },
            required: ["key"],
          },
        },
      },
      run: (args) => {
        const key = str(args.key, "key");
        const v = store.get(key);
        if (v === undefined) throw new Error(`no value under '${key}'`);
        return v;
      },
    },
  };
}
