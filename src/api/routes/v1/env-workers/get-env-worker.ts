import { z } from "zod";
import { envWorkerSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { ApiError } from "../../../errors";
import { defineRoute, errors, jsonContent, runParams } from "../../define";
import { envFeeder } from "./start-env-worker";

export const getEnvWorker = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/env-workers/{env}/{instance}",
    "x-scope": "admin",
    summary: "Describe an env worker",
    request: { params: runParams.extend({ env: z.string(), instance: z.string() }) },
    responses: {
      200: { description: "The env worker.", content: jsonContent(envWorkerSchema) },
      ...errors({ 404: "No such env worker." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const state = await envFeeder(
      c,
      `${run}/${c.req.param("env")}/${c.req.param("instance")}`,
    ).describe();
    if (!state) throw new ApiError("NOT_FOUND", "no such env worker");
    return c.json(state);
  },
);
