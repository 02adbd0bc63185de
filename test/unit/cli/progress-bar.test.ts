import { describe, expect, it } from "vitest";
import { ProgressBar } from "../../../src/cli/progress-bar";

function fakeStream(isTTY: boolean) {
  const writes: string[] = [];
  return {
    writes,
    stream: { isTTY, write: (s: string) => writes.push(s) } as unknown as NodeJS.WriteStream,
  };
}

describe("ProgressBar", () => {
  it("redraws one line in place on a terminal", () => {
    const { writes, stream } = fakeStream(true);
    const bar = new ProgressBar("process", 4, stream);
    bar.update(1);
    bar.update(4, "0 dropped");
    bar.finish();
    expect(writes[0]!.startsWith("\r\u001b[2K")).toBe(true);
    expect(writes[0]).toContain(`process ${"█".repeat(6)}${"░".repeat(18)} 1/4`);
    expect(writes[1]).toContain("4/4");
    expect(writes[1]).toContain("0 dropped");
    expect(writes.at(-1)).toBe("\n");
  });

  it("prints plain lines sparingly when not a terminal, and the final state once", () => {
    const { writes, stream } = fakeStream(false);
    const bar = new ProgressBar("process", 3, stream);
    for (const done of [1, 2, 3, 3, 3]) bar.update(done);
    bar.finish();
    expect(writes.filter((w) => w.includes("3/3"))).toHaveLength(1);
    expect(writes.every((w) => w.endsWith("\n") && !w.includes("\r"))).toBe(true);
    expect(writes.length).toBeLessThanOrEqual(2);
  });
});
