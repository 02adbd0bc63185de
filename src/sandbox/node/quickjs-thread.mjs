// JavaScript runs in QuickJS (wasm), inside a worker thread that quickjs-pool.ts terminates at
// the deadline: QuickJS's own interrupt handler is not consulted while the engine collects
// garbage near its memory limit, so only the thread's termination bounds wall time.
//
// Memory: the engine's wasm memory has a `maximum` of the engine's base plus the run's
// `memory_mb`. QuickJS's own malloc limit does not hold in this build (under Emscripten it
// counts 8 bytes per allocation, not the allocation's size), so the wasm memory's maximum is what
// stops the code: growth past it fails and QuickJS throws "out of memory". Each run gets a fresh
// QuickJS runtime; the engine instance (and its memory) serves the thread's next run only when
// that asks for the same `memory_mb` after this one succeeded and was disposed; otherwise the
// next run instantiates the engine afresh (a few ms). A run that grew the memory by more than
// 16 MiB retires the thread, so that memory is released when the thread ends, not whenever a
// collector gets to it.
//
// Nothing leaves the engine unbounded: console output, the returned value, errors and the
// collected files are formatted and cut inside QuickJS by functions made before the code runs
// (the code cannot reach or replace them), so the host only ever copies capped strings.
//
// The code sees the language, `console` and a `files` object (the scratch files); no fetch,
// timers, modules or host objects. Plain JavaScript so the thread starts without a loader.

import { parentPort, workerData } from "node:worker_threads";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant, Scope } from "quickjs-emscripten-core";

const PAGE_BYTES = 65_536;
/** Emscripten's initial memory for this build (16 MiB: stack and static data). */
const BASE_PAGES = 256;
/** A run whose memory grew more than this past the base retires its thread. */
const RETIRE_GROWTH_BYTES = 16 * 1024 * 1024;
const STACK_BYTES = 512 * 1024;
const ERROR_CAP_CHARS = 4000;

const { wasmModule } = workerData;

// Made inside each runtime before the code: console, and the only ways data leaves the engine.
// Natives are captured here, so code that later replaces String.prototype.slice, JSON or
// Reflect changes nothing for these functions.
const PRELUDE = `(function (write, limits) {
  "use strict";
  const S = String, stringify = JSON.stringify, apply = Reflect.apply;
  const slice = String.prototype.slice, keys = Object.keys, isObject = (x) => x !== null && typeof x === "object";
  const cut = (s, n) => (s.length > n ? apply(slice, s, [0, n]) : s);
  const text = (x) => {
    if (typeof x === "string") return x;
    try {
      const json = stringify(x);
      return json === undefined ? S(x) : json;
    } catch {
      try { return S(x); } catch { return "[unprintable]"; }
    }
  };
  const room = { 1: limits.output_chars, 2: limits.output_chars };
  const logger = (fd) => (...args) => {
    if (room[fd] <= 0) return;
    let line = "";
    for (let i = 0; i < args.length && line.length < room[fd]; i++) {
      line += (i > 0 ? " " : "") + cut(text(args[i]), room[fd]);
    }
    line = cut(line + "\\n", room[fd]);
    room[fd] -= line.length;
    write(fd, line);
  };
  globalThis.console = { log: logger(1), info: logger(1), error: logger(2), warn: logger(2) };
  return {
    value(v) {
      if (v === undefined) return null;
      let json;
      try { json = stringify(v); } catch { json = text(v); }
      if (json === undefined) return null;
      return json.length > limits.value_chars ? json.length : json;
    },
    error(e) {
      if (typeof e === "string") return cut(e, ${ERROR_CAP_CHARS});
      let name = "Error", message;
      try { if (isObject(e) && typeof e.name === "string") name = e.name; } catch {}
      try { message = isObject(e) && typeof e.message === "string" ? e.message : text(e); } catch { message = "[unprintable]"; }
      return cut(cut(name, 200) + ": " + cut(message, ${ERROR_CAP_CHARS}), ${ERROR_CAP_CHARS});
    },
    files() {
      const out = {};
      let room = limits.collect_chars, count = 0, cutCount = 0;
      try {
        const all = globalThis.files;
        for (const name of isObject(all) ? keys(all) : []) {
          if (count >= limits.collect_files || room <= 0) { cutCount++; continue; }
          let content;
          try { content = text(all[name]); } catch { content = "[unreadable]"; }
          if (content.length > room) cutCount++;
          out[cut(name, 256)] = cut(content, room);
          room -= Math.min(content.length, room);
          count++;
        }
      } catch {
        cutCount++;
      }
      return stringify({ files: out, cut: cutCount });
    },
  };
})`;

parentPort.postMessage({ ready: true });
parentPort.on("message", async (request) => {
  parentPort.postMessage(await run(request));
});

/** The thread's engine instance: `{ quickjs, memory, maxPages, refused }`, or null. */
let engine = null;

async function engineFor(memoryMb) {
  const maxPages = BASE_PAGES + Math.ceil((memoryMb * 1024 * 1024) / PAGE_BYTES);
  if (engine?.maxPages === maxPages) return engine;
  engine = null;
  const memory = new WebAssembly.Memory({ initial: BASE_PAGES, maximum: maxPages });
  const next = { quickjs: null, memory, maxPages, refused: false };
  // Emscripten grows the heap through this object: a refused growth means the run hit its cap
  // (QuickJS then throws "out of memory", or `null` when it cannot even make that error).
  const grow = memory.grow.bind(memory);
  memory.grow = (pages) => {
    try {
      return grow(pages);
    } catch (err) {
      next.refused = true;
      throw err;
    }
  };
  next.quickjs = await newQuickJSWASMModuleFromVariant(
    newVariant(variant, { wasmModule, wasmMemory: memory }),
  );
  engine = next;
  return next;
}

async function run(request) {
  const deadline = Date.now() + request.timeout_ms;
  const output = { stdout: "", stderr: "" };
  let current;
  try {
    current = await engineFor(request.memory_mb);
  } catch (err) {
    return { ...output, error: { kind: "runtime", message: String(err) }, retire: true };
  }
  current.refused = false;
  const grown = () =>
    current.memory.buffer.byteLength > BASE_PAGES * PAGE_BYTES + RETIRE_GROWTH_BYTES;
  let interrupted = false;
  const failure = (kind, message) => ({ ...output, error: { kind, message }, retire: grown() });
  const fail = (message) => {
    const kind = classify(message, interrupted);
    if (current.refused && kind === "runtime") {
      const thrown = message === "Error: null" ? "" : ` (${message})`;
      return failure("memory", `InternalError: out of memory${thrown}`);
    }
    return failure(kind, message);
  };
  const scope = new Scope();
  let runtime = null;
  let context = null;
  let result = null;
  try {
    runtime = current.quickjs.newRuntime();
    context = runtime.newContext();
    runtime.setMaxStackSize(STACK_BYTES);
    runtime.setInterruptHandler(() => {
      interrupted = Date.now() > deadline;
      return interrupted;
    });
    result = evaluate(request, context, runtime, scope.manage, output, { fail, failure, grown });
    return result;
  } catch (err) {
    // QuickJS itself gave up (out of memory while building an error, a broken runtime).
    return fail(err instanceof Error ? err.message : String(err));
  } finally {
    // Keep the engine for the next run only after a run that succeeded and frees cleanly: a
    // failed one (out of memory, interrupted, a stack overflow) may leave it in a state that
    // a new instance costs only milliseconds to rule out.
    let kept = result?.error === null && !interrupted && !current.refused;
    if (kept) {
      try {
        scope.dispose();
        context?.dispose();
        runtime?.dispose();
      } catch {
        kept = false;
      }
    }
    if (!kept && engine === current) engine = null;
  }
}

function evaluate(request, context, runtime, manage, output, { fail, failure, grown }) {
  const { limits } = request;
  const helpers = installPrelude(context, output, limits, manage);
  context.setProp(context.global, "files", jsonHandle(context, request.files ?? {}, manage));
  // The code is a function body (as in the Worker Loader adapter): its `return` is the value.
  const evaluated = context.evalCode(`(function (files) {\n${request.code}\n})(files)`, "main.js");
  if (evaluated.error) return fail(readError(context, helpers, manage(evaluated.error), manage));
  let value = manage(evaluated.value);
  const state = context.getPromiseState(value);
  if (!state.notAPromise) {
    const jobs = runtime.executePendingJobs();
    if (jobs.error) manage(jobs.error);
    const settled = context.getPromiseState(value);
    if (settled.type === "rejected") {
      return fail(readError(context, helpers, manage(settled.error), manage));
    }
    if (settled.type === "pending") return fail("the returned promise never settled");
    value = manage(settled.value);
  }
  const json = callHelper(context, helpers, "value", manage, value);
  if (typeof json === "number") {
    return failure(
      "runtime",
      `the returned value is ${json} characters as JSON, more than the cap of ${limits.value_chars}`,
    );
  }
  const result = { ...output, error: null, value: json, retire: grown() };
  if (request.collect_files) {
    const collected = JSON.parse(callHelper(context, helpers, "files", manage));
    result.files = collected.files;
    if (collected.cut > 0) {
      result.stderr += `\n[sandbox] collected files cut at ${limits.collect_files} files and ${limits.collect_chars} characters in all (${collected.cut} files cut or left out)\n`;
    }
  }
  return result;
}

function classify(message, interrupted) {
  if (interrupted || /interrupted/i.test(message)) return "timeout";
  if (/out of memory|memory limit|memory access out of bounds/i.test(message)) return "memory";
  return "runtime";
}

/** Runs the prelude; console writes land in `output`, already cut to the limits. */
function installPrelude(context, output, limits, manage) {
  const write = manage(
    context.newFunction("write", (fd, line) => {
      // Only the prelude holds `write`, and it passes strings already cut; checked all the same.
      if (context.typeof(line) !== "string") return;
      const stream = context.getNumber(fd) === 1 ? "stdout" : "stderr";
      const room = limits.output_chars - output[stream].length;
      if (room > 0) output[stream] += context.getString(line).slice(0, room);
    }),
  );
  const factory = manage(context.unwrapResult(context.evalCode(PRELUDE, "prelude.js")));
  const called = context.callFunction(
    factory,
    context.undefined,
    write,
    jsonHandle(context, limits, manage),
  );
  return manage(context.unwrapResult(called));
}

/**
 * Calls one of the prelude's helpers: a string or number comes back (null otherwise). They catch
 * the code's throws themselves; what escapes them (out of memory, the deadline) is read as an
 * error message, never dumped whole.
 */
function callHelper(context, helpers, name, manage, ...args) {
  const fn = manage(context.getProp(helpers, name));
  const called = context.callFunction(fn, context.undefined, ...args);
  if (called.error) throw new Error(readError(context, helpers, manage(called.error), manage));
  const result = manage(called.value);
  const type = context.typeof(result);
  if (type === "string") return context.getString(result);
  if (type === "number") return context.getNumber(result);
  return null;
}

/** The error's `name: message`, cut by the prelude; the engine's own message if that fails. */
function readError(context, helpers, handle, manage) {
  const fn = manage(context.getProp(helpers, "error"));
  const called = context.callFunction(fn, context.undefined, handle);
  const result = manage(called.error ?? called.value);
  if (!called.error && context.typeof(result) === "string") return context.getString(result);
  return "InternalError: the error could not be read (out of memory or past the deadline)";
}

function jsonHandle(context, value, manage) {
  return manage(context.unwrapResult(context.evalCode(`(${JSON.stringify(value)})`)));
}
