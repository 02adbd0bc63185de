import { describe, expect, it } from "vitest";
import { CommitTimeoutError, GroupCommit } from "../../../src/core/concurrency/group-commit";

/** A commit function whose writes finish only when the test says so. */
function controlledWriter() {
  const commits: string[][] = [];
  const finishers: ((fail?: Error) => void)[] = [];
  const write = (items: string[]) => {
    commits.push(items);
    return new Promise<string[]>((resolve, reject) => {
      finishers.push((fail) => (fail ? reject(fail) : resolve(items.map((i) => `stored:${i}`))));
    });
  };
  const finishNext = async (fail?: Error) => {
    while (finishers.length === 0) await new Promise((r) => setTimeout(r, 1));
    finishers.shift()!(fail);
    await new Promise((r) => setTimeout(r, 1));
  };
  return { commits, write, finishNext };
}

/** Lets the first submitter start its commit, as a separate request's event would. */
const tick = () => new Promise((r) => setTimeout(r, 1));

const options = { maxItems: 100, maxBytes: 1_000, sizeOf: (item: string) => item.length };

describe("GroupCommit", () => {
  it("commits a lone submission at once, without waiting for company", async () => {
    const writer = controlledWriter();
    const commit = new GroupCommit<string, string>(options);
    const done = commit.submit(["a"], writer.write);
    await writer.finishNext();
    expect(await done).toEqual({ results: ["stored:a"], info: { items: 1, submissions: 1 } });
    expect(writer.commits).toEqual([["a"]]);
  });

  it("writes submissions that arrive during a commit together, each getting its own results", async () => {
    const writer = controlledWriter();
    const commit = new GroupCommit<string, string>(options);
    const first = commit.submit(["a"], writer.write);
    await tick();
    const others = [
      commit.submit(["b1", "b2"], writer.write),
      commit.submit(["c"], writer.write),
      commit.submit(["d"], writer.write),
    ];
    expect(commit.waiting).toBe(3);
    await writer.finishNext();
    await writer.finishNext();
    expect(writer.commits).toEqual([["a"], ["b1", "b2", "c", "d"]]);
    expect((await first).results).toEqual(["stored:a"]);
    const [b, c, d] = await Promise.all(others);
    expect(b).toEqual({ results: ["stored:b1", "stored:b2"], info: { items: 4, submissions: 3 } });
    expect(c!.results).toEqual(["stored:c"]);
    expect(d!.results).toEqual(["stored:d"]);
    expect(commit.waiting).toBe(0);
  });

  it("splits commits at maxItems and maxBytes, oldest first, and commits an oversized one alone", async () => {
    const writer = controlledWriter();
    const commit = new GroupCommit<string, string>({ ...options, maxItems: 3, maxBytes: 10 });
    const all = [commit.submit(["x"], writer.write)];
    await tick();
    all.push(
      commit.submit(["p", "q"], writer.write),
      commit.submit(["r", "s"], writer.write),
      commit.submit(["0123456789abc"], writer.write),
      commit.submit(["t"], writer.write),
    );
    for (let i = 0; i < 5; i++) await writer.finishNext();
    await Promise.all(all);
    // [p, q] + [r, s] would be 4 items > 3; [r, s] + the 13-byte item would be > 10 bytes.
    expect(writer.commits).toEqual([["x"], ["p", "q"], ["r", "s"], ["0123456789abc"], ["t"]]);
  });

  it("fails every submission of a failed commit, and the next commit still runs", async () => {
    const writer = controlledWriter();
    const commit = new GroupCommit<string, string>(options);
    const first = commit.submit(["a"], writer.write);
    await tick();
    const second = commit.submit(["b"], writer.write);
    const third = commit.submit(["c"], writer.write);
    const firstResult = expect(first).rejects.toThrow("disk on fire");
    await writer.finishNext(new Error("disk on fire"));
    await firstResult;
    const secondResult = expect(second).rejects.toThrow("R2 said no");
    const thirdResult = expect(third).rejects.toThrow("R2 said no");
    await writer.finishNext(new Error("R2 said no"));
    await secondResult;
    await thirdResult;
    const fourth = commit.submit(["d"], writer.write);
    await writer.finishNext();
    expect((await fourth).results).toEqual(["stored:d"]);
  });

  it("takes over from a leader that vanished, and waiters give up after their timeout", async () => {
    let clock = 0;
    const writes: string[][] = [];
    const write = (items: string[]) => {
      writes.push(items);
      // The first commit never finishes: its request was cancelled without waitUntil.
      return items[0] === "lost" ? new Promise<string[]>(() => {}) : Promise.resolve(items);
    };
    const commit = new GroupCommit<string, string>({
      ...options,
      leaderTimeoutMs: 1_000,
      waitTimeoutMs: 50,
      now: () => clock,
    });
    void commit.submit(["lost"], write);
    await tick();
    const stuck = commit.submit(["stuck"], write);
    await expect(stuck).rejects.toBeInstanceOf(CommitTimeoutError);
    clock = 5_000;
    expect((await commit.submit(["fresh"], write)).results).toEqual(["fresh"]);
    expect(writes).toEqual([["lost"], ["fresh"]]);
  });
});
