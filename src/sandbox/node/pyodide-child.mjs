// One throwaway Python run, started by python-pool.ts without network and under Node's
// permission model. It loads Pyodide (from a memory snapshot when SANDBOX_SNAPSHOT names one),
// cuts Pyodide's bridges to the host, says {"ready":true}, runs exactly one request read from
// stdin, answers on stdout and exits. With `--make-snapshot PATH` it writes the snapshot instead.
// Plain JavaScript so it starts without a TypeScript loader.
import { constants as fsConstants, readFileSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import { createInterface } from "node:readline";

// Python can reach this JavaScript realm (pop the import block, import pyodide_js, call a
// Function constructor), and Node's permission model does not cover signals: process.kill could
// end the host (process.ppid), pid 1 or any process of the user, and process._debugProcess
// (SIGUSR1) would open an inspector in the host. Take them away before Pyodide or user code runs;
// the raw bindings are not reachable again (process.binding is refused below, internals are not
// exposed). process.exit/abort stay: they end only this child.
const refused = (what) => () => {
  throw new Error(`${what} is not available in the sandbox`);
};
for (const name of ["kill", "_kill", "_debugProcess", "_debugEnd", "_linkedBinding", "dlopen"]) {
  Object.defineProperty(process, name, {
    value: refused(`process.${name}`),
    writable: false,
    configurable: false,
  });
}
// Renicing another process is the one other cross-process call left in the built-in modules.
os.setPriority = refused("os.setPriority");
syncBuiltinESMExports();

const protocolOut = process.stdout;
// Pyodide and user code must not write to the protocol stream.
const toStderr = (...args) => process.stderr.write(`${args.join(" ")}\n`);
console.log = toStderr;
console.info = toStderr;
console.warn = toStderr;
console.debug = toStderr;

/** Writes one protocol line; resolves once it has left the process (a pipe write can be async). */
const send = (message) =>
  new Promise((resolve) => protocolOut.write(`${JSON.stringify(message)}\n`, () => resolve()));
const SCRATCH = "/scratch";

// wasm linear memory lies outside V8's heap limit: refuse growth past the request's cap so
// Python gets a MemoryError instead of taking the host's memory.
let memoryLimitBytes = 0;
const grow = WebAssembly.Memory.prototype.grow;
WebAssembly.Memory.prototype.grow = function cappedGrow(pages) {
  if (memoryLimitBytes > 0 && this.buffer.byteLength + pages * 65536 > memoryLimitBytes) {
    throw new RangeError("sandbox memory limit reached");
  }
  return grow.call(this, pages);
};

// Emscripten's NODEFS reads fs flag constants through process.binding, which the permission
// model forbids; hand it the public constants (NODEFS itself is never mounted).
process.binding = (name) => {
  if (name === "constants") return { fs: fsConstants };
  throw new Error(`process.binding('${name}') is not available in the sandbox`);
};

// Removes every module that reaches back into JavaScript (run_js, pyfetch, mountNodeFS, the
// js namespace) and refuses to import them again.
const SEAL = `
import sys
class _BlockBridges:
    blocked = ("js", "pyodide_js", "pyodide", "_pyodide", "_pyodide_core", "micropip")
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.blocked:
            raise ImportError(f"module '{name}' is not available in the sandbox")
        return None
for _name in list(sys.modules):
    if _name.split(".")[0] in _BlockBridges.blocked:
        del sys.modules[_name]
sys.meta_path.insert(0, _BlockBridges())
del _BlockBridges, _name
`;

// Walks the scratch directory in a fixed order and keeps at most MAX_FILES files and MAX_CHARS
// characters in all (the limits come with the request); what is cut is counted, not read.
const COLLECT = `
import os, json
def _collect(max_files, max_chars):
    out, room, cut = {}, max_chars, 0
    for root, dirs, names in os.walk(${JSON.stringify(SCRATCH)}):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(root, n)
            if len(out) >= max_files or room <= 0:
                cut += 1
                continue
            try:
                with open(p, encoding="utf-8", errors="replace") as f:
                    text = f.read(room + 1)
            except OSError:
                continue
            if len(text) > room:
                text = text[:room]
                cut += 1
            out[os.path.relpath(p, ${JSON.stringify(SCRATCH)})] = text
            room -= len(text)
    return json.dumps({"files": out, "cut": cut})
`;

async function load(options) {
  const { loadPyodide } = await import("pyodide");
  return loadPyodide({ jsglobals: {}, env: { HOME: SCRATCH }, ...options });
}

async function makeSnapshot(path) {
  const pyodide = await load({ _makeSnapshot: true });
  writeFileSync(path, pyodide.makeMemorySnapshot());
}

function capturedStream(capBytes) {
  const decoder = new TextDecoder();
  const parts = [];
  let bytes = 0;
  return {
    parts,
    write(chunk) {
      if (bytes < capBytes) {
        const piece = chunk.subarray(0, capBytes - bytes);
        bytes += piece.length;
        parts.push(decoder.decode(piece, { stream: true }));
      }
      return chunk.length;
    },
    text: () => parts.join(""),
  };
}

async function serveOne() {
  const snapshotPath = process.env.SANDBOX_SNAPSHOT;
  const pyodide = await load(snapshotPath ? { _loadSnapshot: readFileSync(snapshotPath) } : {});
  pyodide.mountNodeFS = () => {
    throw new Error("host mounts are disabled in the sandbox");
  };
  pyodide.FS.filesystems.NODEFS = undefined;
  pyodide.runPython(SEAL);
  pyodide.runPython(COLLECT);
  const collect = pyodide.globals.get("_collect");
  await send({ ready: true });

  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const { value: line } = await lines.next();
  if (!line) return;
  const request = JSON.parse(line);
  const { limits } = request;
  // Output past the cap is dropped as it is written: bytes, so never more characters than that.
  const stdout = capturedStream(limits.output_chars);
  const stderr = capturedStream(limits.output_chars);
  pyodide.setStdout(stdout);
  pyodide.setStderr(stderr);
  memoryLimitBytes = request.memory_mb * 1024 * 1024;
  pyodide.FS.mkdirTree(SCRATCH);
  pyodide.FS.chdir(SCRATCH);
  let error = null;
  try {
    for (const [name, content] of Object.entries(request.files ?? {})) {
      const path = `${SCRATCH}/${name}`;
      pyodide.FS.mkdirTree(path.split("/").slice(0, -1).join("/"));
      pyodide.FS.writeFile(path, content);
    }
    pyodide.runPython(request.code, { filename: "main.py" });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    error = /MemoryError|memory limit|out of memory/i.test(message)
      ? { kind: "memory", message: `${lastLine(message)} (limit ${request.memory_mb} MiB)` }
      : { kind: "runtime", message: userTraceback(message) };
  }
  let files;
  let note = "";
  if (request.collect_files) {
    memoryLimitBytes = 0;
    try {
      const collected = JSON.parse(collect(limits.collect_files, limits.collect_chars));
      files = collected.files;
      if (collected.cut > 0) {
        note = `\n[sandbox] collected files cut at ${limits.collect_files} files and ${limits.collect_chars} characters in all (${collected.cut} files cut or left out)\n`;
      }
    } catch {
      files = {};
    }
  }
  const answer = { stdout: stdout.text(), stderr: stderr.text() + note, error };
  await send(files ? { ...answer, files } : answer);
}

function lastLine(text) {
  return (text.trim().split("\n").at(-1) ?? text).slice(0, 4000);
}

/** The traceback from the user's first frame on, without Pyodide's own frames. */
function userTraceback(text) {
  const lines = text.trim().split("\n");
  const first = lines.findIndex((l) => l.includes('File "main.py"'));
  const body = first >= 0 ? ["Traceback (most recent call last):", ...lines.slice(first)] : lines;
  return body.join("\n").slice(-4000);
}

const snapshotFlag = process.argv.indexOf("--make-snapshot");
const task = snapshotFlag >= 0 ? makeSnapshot(process.argv[snapshotFlag + 1]) : serveOne();
// Exit only once the answer has been written out: a pipe takes a large line in several writes,
// and exiting earlier cut it off.
task.then(
  () => process.exit(0),
  (err) =>
    send({ fatal: err instanceof Error ? err.message : String(err) }).then(() => process.exit(1)),
);
