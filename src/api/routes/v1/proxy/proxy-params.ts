/** Path parameters of the inference proxy's routes. */
import { proxySessionIdSchema } from "../../../../core/wire/proxy-session";
import { runParams } from "../../define";

export const sessionParams = runParams.extend({
  session: proxySessionIdSchema.describe("The session; created on first use by the OpenAI routes."),
});
