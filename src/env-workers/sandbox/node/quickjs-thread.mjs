// JavaScript runs in QuickJS (wasm), inside a worker thread that quickjs-pool.ts terminates at
// the deadline: QuickJS's own interrupt handler is not consulted while the engine collects
// garbage near its memory limit, so only the thread's termination bounds wall time. Every run
// gets a fresh QuickJS runtime; a thread serves runs until one fails, then it retires (a failed
// runtime may not free cleanly, and the engine's module is shared by the thread's runs).
// The code sees the language, `console` and a `files` object (the scratch files); no fetch,
// timers, modules or host objects. Plain JavaScript so the thread starts without a loader.

import { parentPort } from "node:worker_threads";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant } from "quickjs-emscripten-core";

const OUTPUT_CAP_CHARS = 64 * 1024;
const STACK_BYTES = 512 * 1024;

const quickjs = await newQuickJSWASMModuleFromVariant(variant);
parentPort.postMessage({ ready: true });
parentPort.on("message", (request) => {
  parentPort.postMessage(run(request));
});

function run(request) {
  const deadline = Date.now() + request.timeout_ms;
  const output = { stdout: "", stderr: "" };
  let interrupted = false;
  const runtime = quickjs.newRuntime();
  runtime.setMemoryLimit(request.memory_mb * 1024 * 1024);
  runtime.setMaxStackSize(STACK_BYTES);
  runtime.setInterruptHandler(() => {
    interrupted = Date.now() > deadline;
    return interrupted;
  });
  const context = runtime.newContext();
  const fail = (message) => ({
    ...output,
    error: { kind: classify(message, interrupted), message },
    retire: true,
  });
  try {
    installConsole(context, output);
    setGlobalJson(context, "files", request.files ?? {});
    // The code is a function body (as in the Worker Loader adapter): its `return` is the value.
    const evaluated = context.evalCode(
      `(function (files) {\n${request.code}\n})(files)`,
      "main.js",
    );
    if (evaluated.error) return fail(dumpError(context, evaluated.error));
    let value = evaluated.value;
    if (isPromise(context, value)) {
      runtime.executePendingJobs();
      const state = context.getPromiseState(value);
      value.dispose();
      if (state.type === "rejected") return fail(dumpError(context, state.error));
      if (state.type === "pending") return fail("the returned promise never settled");
      value = state.value;
    }
    const result = { ...output, error: null, value: jsonOf(context, value) };
    if (request.collect_files) result.files = readFiles(context);
    value.dispose();
    try {
      context.dispose();
      runtime.dispose();
    } catch {
      result.retire = true;
    }
    return result;
  } catch (err) {
    // QuickJS itself gave up (out of memory while building an error, a broken runtime).
    return fail(err instanceof Error ? err.message : String(err));
  }
  // A failed run is not disposed: its thread retires and takes the wasm module with it.
}

function classify(message, interrupted) {
  if (interrupted || /interrupted/i.test(message)) return "timeout";
  if (/out of memory|memory limit/i.test(message)) return "memory";
  return "runtime";
}

function installConsole(context, output) {
  const consoleObject = context.newObject();
  for (const [name, stream] of [
    ["log", "stdout"],
    ["info", "stdout"],
    ["error", "stderr"],
    ["warn", "stderr"],
  ]) {
    const fn = context.newFunction(name, (...args) => {
      const line = args
        .map((arg) => {
          const native = context.dump(arg);
          return typeof native === "string" ? native : JSON.stringify(native);
        })
        .join(" ");
      if (output[stream].length < OUTPUT_CAP_CHARS) {
        output[stream] = `${output[stream]}${line}\n`.slice(0, OUTPUT_CAP_CHARS);
      }
    });
    context.setProp(consoleObject, name, fn);
    fn.dispose();
  }
  context.setProp(context.global, "console", consoleObject);
  consoleObject.dispose();
}

function setGlobalJson(context, name, value) {
  const handle = context.unwrapResult(context.evalCode(`(${JSON.stringify(value)})`));
  context.setProp(context.global, name, handle);
  handle.dispose();
}

function isPromise(context, value) {
  if (context.typeof(value) !== "object") return false;
  const ctor = context.getProp(value, "constructor");
  const name = context.getProp(ctor, "name");
  const promise = context.dump(name) === "Promise";
  name.dispose();
  ctor.dispose();
  return promise;
}

function jsonOf(context, value) {
  if (context.typeof(value) === "undefined") return null;
  const dumped = context.dump(value);
  try {
    return JSON.stringify(dumped) ?? null;
  } catch {
    return String(dumped);
  }
}

function dumpError(context, handle) {
  const error = context.dump(handle);
  if (typeof error === "string") return error;
  return `${error?.name ?? "Error"}: ${error?.message ?? JSON.stringify(error)}`;
}

function readFiles(context) {
  const handle = context.getProp(context.global, "files");
  const dumped = context.dump(handle);
  handle.dispose();
  if (!dumped || typeof dumped !== "object") return {};
  return Object.fromEntries(Object.entries(dumped).map(([k, v]) => [k, String(v)]));
}
