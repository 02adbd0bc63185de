/**
 * Validation of a submitted group (ScoredData): the schema (pydantic-style lax coercion), the
 * group rules (src/core/wire/group-rules.ts: token ids, shapes, no empty sequence, finite scores) and
 * the trajectories an agent env sends beside the 14 keys. Every failure is a 422 naming the field
 * and the rule, before anything is stored.
 */
import { checkGroupShape } from "../core/wire/group-rules";
import { type ScoredDataInput, scoredDataSchema } from "../core/wire/schemas";
import { groupTrajectoriesOf, type Trajectory } from "../core/wire/trajectory";
import {
  summarizeDetails,
  toValidationDetails,
  type ValidationDetail,
} from "../core/wire/validation";
import { ApiError } from "./errors";

export function fail(details: ValidationDetail[]): never {
  throw new ApiError("VALIDATION_FAILED", summarizeDetails(details), details);
}

/** Validates one group; `loc` locates it in the body (["body", i] for the i-th of a list). */
export function validateGroup(json: unknown, loc: (string | number)[] = ["body"]): ScoredDataInput {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    fail([
      {
        type: "model_attributes_type",
        loc,
        msg: "Input should be a valid dictionary or object to extract fields from",
        input: Array.isArray(json) ? "<list>" : json,
      },
    ]);
  }
  const parsed = scoredDataSchema.safeParse(json);
  if (!parsed.success) fail(toValidationDetails(parsed.error, json, loc));
  const shape = checkGroupShape(parsed.data, loc);
  if (shape.length) fail(shape);
  return parsed.data;
}

/**
 * The trajectories a submitted group carries beside its 14 keys (agent envs), checked against the
 * group: null when it has none; 422 when they are invalid or name a sequence it does not have.
 */
export function trajectoriesOfSubmission(
  json: unknown,
  sequences: number,
  loc: (string | number)[] = ["body"],
): Trajectory[] | null {
  const invalid = (msg: string) =>
    fail([{ type: "value_error", loc: [...loc, "trajectories"], msg }]);
  const result = groupTrajectoriesOf(json);
  if (!result.ok) return invalid(result.message);
  const outside = result.trajectories?.find((t) => t.sequence >= sequences);
  if (outside) {
    return invalid(`a trajectory names sequence ${outside.sequence}; the group has ${sequences}`);
  }
  return result.trajectories;
}
