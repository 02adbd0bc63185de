/** Plain node:http plumbing shared by the simulator and the llama.cpp engine (src/engine). */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Body } from "./protocols";

const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** OpenAI's error shape (vLLM answers it too). */
export function errorBody(message: string, type: string, code: number): Body {
  return { error: { message, type, code } };
}

export function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendText(res: ServerResponse, text: string): void {
  res.writeHead(200, { "content-type": "text/plain", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Promises the full length, sends half, then drops the connection. */
export function sendTruncated(res: ServerResponse, body: unknown): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(200, { "content-type": "application/json", "content-length": bytes.length });
  res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy());
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.destroy();
        reject(new Error("request body too large"));
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
