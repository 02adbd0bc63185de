import { z } from "zod";
import { defineRoute, jsonContent } from "../define";

export const root = defineRoute(
  {
    method: "get",
    path: "/",
    "x-scope": "read",
    summary: "Liveness",
    description: 'Answers `{"message": "AtroposLib API"}`; needs no token.',
    responses: {
      200: {
        description: "The API is up.",
        content: jsonContent(z.object({ message: z.literal("AtroposLib API") })),
      },
    },
  },
  (c) => c.json({ message: "AtroposLib API" }),
);
