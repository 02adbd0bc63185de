import { z } from "zod";
import { statusEnvSchema } from "../../../core/wire/api-schemas";
import { envIdSchema } from "../../../core/wire/schemas";
import { summarizeDetails, toValidationDetails } from "../../../core/wire/validation";
import { parseJson, readBody } from "../../body";
import { type AppContext, runOf } from "../../context";
import { ApiError } from "../../errors";
import { jsonBodyLimits } from "../../request";
import { touchEnv } from "../../storage/runs";
import { statusForEnv } from "../../storage/status";
import { bodyErrors, defineRoute, errors, jsonContent, jsonRequest } from "../define";

async function jsonBodyOrMissing(c: AppContext): Promise<unknown> {
  const { bytes } = await readBody(c.req.raw, jsonBodyLimits(c));
  if (bytes.byteLength === 0) {
    throw new ApiError(
      "VALIDATION_FAILED",
      'send the env id as a JSON body {"env_id": N} (Content-Type: application/json) or as ?env_id=N',
      [{ type: "missing", loc: ["body"], msg: "Field required" }],
    );
  }
  return parseJson(bytes);
}

async function envIdFromRequest(c: AppContext): Promise<number> {
  const query = c.req.query("env_id");
  const raw = query !== undefined ? { env_id: query } : await jsonBodyOrMissing(c);
  const parsed = envIdSchema.safeParse(raw);
  if (!parsed.success) {
    const details = toValidationDetails(parsed.error, raw);
    throw new ApiError("VALIDATION_FAILED", summarizeDetails(details), details);
  }
  return parsed.data.env_id;
}

export const statusEnv = defineRoute(
  {
    method: "get",
    path: "/status-env",
    "x-scope": "env",
    summary: "Scheduling numbers of one env (and its heartbeat)",
    description:
      'The env id comes as a JSON body on the GET (`{"env_id": N}`, as Atropos clients send it) or as `?env_id=N`.',
    request: {
      query: z.object({ env_id: z.string().optional().describe("Instead of the JSON body.") }),
      body: jsonRequest(envIdSchema, false),
    },
    responses: {
      200: { description: "Atropos' status-env numbers.", content: jsonContent(statusEnvSchema) },
      ...bodyErrors(),
      ...errors({ 404: "No env with this env_id in the run; register again." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const envId = await envIdFromRequest(c);
    const found = await statusForEnv(c.env.DB, run, envId);
    if (!found) {
      throw new ApiError(
        "NOT_FOUND",
        `env_id ${envId} is not registered in run '${run}'; register again with /register-env`,
      );
    }
    // Heartbeat, written at most every 5 s per env.
    const now = Date.now();
    c.executionCtx.waitUntil(touchEnv(c.env.DB, run, envId, now));
    // policy_version: envs stamp the version their rollouts are sampled under (not the one
    // current when the group arrives); Atropos clients ignore the extra field.
    return c.json({ ...found.status, policy_version: found.policyVersion });
  },
);
