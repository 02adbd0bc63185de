import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toValidationDetails } from "../../../src/core/wire/validation";

const schema = z.object({ lease_id: z.string(), env_id: z.number().int(), score: z.number() });

function detailsOf(input: unknown) {
  const parsed = schema.safeParse(input);
  if (parsed.success) throw new Error("expected a failure");
  return toValidationDetails(parsed.error, input);
}

describe("toValidationDetails", () => {
  it("says a field is missing only when it is absent", () => {
    const [missing] = detailsOf({ env_id: 1, score: 1 });
    expect(missing).toMatchObject({ type: "missing", loc: ["body", "lease_id"] });
  });

  it("says what is wrong with a present field of the wrong type", () => {
    for (const value of [5, null]) {
      const [detail] = detailsOf({ lease_id: value, env_id: 1, score: 1 });
      expect(detail).toMatchObject({ type: "string_type", msg: "Input should be a valid string" });
    }
    const [int] = detailsOf({ lease_id: "x", env_id: 0.5, score: 1 });
    expect(int?.msg).not.toBe("Field required");
    expect(int?.loc).toEqual(["body", "env_id"]);
  });

  it("calls 1e400 (parsed as Infinity) not finite", () => {
    const input = JSON.parse('{"lease_id":"x","env_id":1,"score":1e400}');
    const [detail] = detailsOf(input);
    expect(detail).toMatchObject({ type: "finite_number", msg: "Input should be a finite number" });
  });
});

describe("toValidationDetails on the API's schemas", () => {
  it("names the problem of present values: 1e400, 0.5 for an integer", async () => {
    const { evalReportSchema, leaseRequestSchema, scoredDataSchema } = await import(
      "../../../src/core/wire/schemas"
    );
    const { finishSessionRequestSchema } = await import("../../../src/core/wire/proxy-session");
    const cases: [z.ZodType, string][] = [
      [finishSessionRequestSchema, '{"scores":[1e400]}'],
      [leaseRequestSchema, '{"lease_seconds":1e400}'],
      [evalReportSchema, '{"step":1,"metrics":{"loss":1e400}}'],
      [scoredDataSchema, '{"tokens":[[1]],"masks":[[1]],"scores":[1],"env_id":0.5}'],
      [scoredDataSchema, '{"tokens":[[1]],"masks":[[1]],"scores":[1],"policy_version":0.5}'],
      [scoredDataSchema, '{"tokens":[[1]],"masks":[[1]],"scores":[1e400]}'],
    ];
    for (const [schema, text] of cases) {
      const input = JSON.parse(text);
      const parsed = schema.safeParse(input);
      expect(parsed.success, text).toBe(false);
      if (parsed.success) continue;
      const [detail] = toValidationDetails(parsed.error, input);
      expect(detail?.msg, text).not.toBe("Field required");
      expect(detail?.type, text).not.toBe("missing");
    }
  });
});
