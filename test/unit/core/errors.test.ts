import { describe, expect, it } from "vitest";
import { errorMessage } from "../../../src/core/errors";

describe("errorMessage", () => {
  it("shows an Error's message (not its name or stack) and anything else as a string", () => {
    expect(errorMessage(new TypeError("bad input"))).toBe("bad input");
    expect(errorMessage("plain text")).toBe("plain text");
    expect(errorMessage(42)).toBe("42");
    expect(errorMessage(undefined)).toBe("undefined");
    expect(errorMessage({ status: 500 })).toBe("[object Object]");
  });
});
