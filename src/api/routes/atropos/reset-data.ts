import { z } from "zod";
import { type AppContext, coordinator, runOf } from "../../context";
import { ApiError } from "../../errors";
import { type ApiRoute, defineRoute, errors } from "../define";

async function resetData(c: AppContext): Promise<Response> {
  // A destructive GET must not be triggerable by another site's <img> or fetch.
  const site = c.req.header("sec-fetch-site");
  if (site === "cross-site" || site === "same-site") {
    throw new ApiError("FORBIDDEN", "cross-site requests may not reset data");
  }
  const run = runOf(c);
  await coordinator(c, run).reset(run);
  return c.text("Reset successful");
}

// Atropos serves it as a GET; POST is the same operation for clients that avoid a destructive GET.
function resetRoute(method: "get" | "post"): ApiRoute {
  return defineRoute(
    {
      method,
      path: "/reset_data",
      "x-scope": "admin",
      summary: "Delete all data of the run",
      description:
        "D1 rows, payloads, env checkpoints and env workers. Refused for cross-site browser requests.",
      responses: {
        200: {
          description: "Plain text `Reset successful`.",
          content: { "text/plain": { schema: z.literal("Reset successful") } },
        },
        ...errors({ 403: "A cross-site browser request, or no credentials on a deployment." }),
      },
    },
    resetData,
  );
}

export const resetDataGet = resetRoute("get");
export const resetDataPost = resetRoute("post");
