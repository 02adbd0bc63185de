import { groupDetailSchema } from "../../../../core/wire/api-schemas";
import { runOf } from "../../../context";
import { canonicalPayload } from "../../../delivery";
import { ApiError } from "../../../errors";
import { ownGroupsOnly } from "../../../middleware/auth";
import { intParam, intPathParam } from "../../../request";
import { groupDetailRow } from "../../../storage/group-reads";
import { groupRef } from "../../../storage/payloads";
import { groupTokenTextsOf } from "../../../storage/token-texts";
import { defineRoute, errors, jsonContent, runParams } from "../../define";

export const getGroup = defineRoute(
  {
    method: "get",
    path: "/runs/{run}/groups/{id}",
    "x-scope": "read",
    "x-contributor-own": true,
    summary: "One group with its payload",
    request: { params: runParams.extend({ id: intPathParam }) },
    responses: {
      200: {
        description: "The group's row and its payload.",
        content: jsonContent(groupDetailSchema),
      },
      ...errors({ 404: "No such group in the run." }),
    },
  },
  async (c) => {
    const run = runOf(c);
    const id = intParam(c, "id");
    const row = await groupDetailRow(c.env.DB, run, id);
    // A contributor sees only its own groups; others are "not found" so ids reveal nothing.
    const own = ownGroupsOnly(c);
    if (!row || (own !== null && row.token_id !== own)) {
      throw new ApiError("NOT_FOUND", `group ${id} does not exist in run '${run}'`);
    }
    const {
      payload_key,
      payload_encoding,
      payload_offset,
      payload_bytes,
      payload_inline,
      raw_bytes,
      raw_crc32,
      ...meta
    } = row;
    const payload = await canonicalPayload(c.env, groupRef(row));
    const tokenTexts = await groupTokenTextsOf(c.env.DB, run, id);
    return new Response(
      `{"group":${JSON.stringify(meta)},"payload":${payload},"token_texts":${JSON.stringify(tokenTexts)}}`,
      {
        headers: { "content-type": "application/json" },
      },
    );
  },
);
