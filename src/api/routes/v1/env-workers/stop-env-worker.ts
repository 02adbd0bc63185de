import { z } from "zod";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { defineRoute, errors, jsonContent, runParams } from "../../define";
import { envFeeder } from "./start-env-worker";

export const stopEnvWorker = defineRoute(
  {
    method: "post",
    path: "/runs/{run}/env-workers/{env}/{instance}/stop",
    "x-scope": "admin",
    summary: "Stop an env worker",
    request: { params: runParams.extend({ env: z.string(), instance: z.string() }) },
    responses: {
      200: {
        description: "Its status after stopping.",
        content: jsonContent(z.object({ status: z.string() })),
      },
      ...errors({ 404: "No such env worker." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const state = await envFeeder(
      c,
      `${run}/${c.req.param("env")}/${c.req.param("instance")}`,
    ).stop();
    if (!state) throw new ApiError("NOT_FOUND", "no such env worker");
    return c.json({ status: state.status });
  },
);
