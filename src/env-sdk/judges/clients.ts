/**
 * Judge endpoints → panel judges: each endpoint gets its own ServerManager (its own server,
 * model and key, apart from the policy's). `n` judges over fewer endpoints reuse them in turn
 * with distinct seeds and names (`name#2`).
 */
import type { JudgeCalibration, JudgeEndpoint } from "../../core/wire/judge-schemas";
import { ServerManager, type ServerManagerOptions } from "../../inference/server-manager";
import type { PanelJudge } from "./panel";

export function panelJudges(
  endpoints: readonly JudgeEndpoint[],
  options: {
    n?: number;
    calibrations?: Record<string, JudgeCalibration>;
    manager?: ServerManagerOptions;
  } = {},
): PanelJudge[] {
  if (endpoints.length === 0) throw new Error("no judge endpoints configured");
  const n = options.n ?? endpoints.length;
  const managers = endpoints.map(
    (e) =>
      new ServerManager(
        [
          {
            base_url: e.base_url,
            model_name: e.model_name,
            server_type: e.server_type,
            api_key: e.api_key,
            timeout: e.timeout,
            tokenizer_name: e.model_name,
          },
        ],
        // Judges are scored by the panel, not retried at length: a dead judge is a recorded failure.
        { backoff: { maxAttempts: 2, baseMs: 200, maxMs: 1000 }, ...options.manager },
      ),
  );
  return Array.from({ length: n }, (_, i) => {
    const e = endpoints[i % endpoints.length]!;
    const round = Math.floor(i / endpoints.length);
    const name = round === 0 ? e.name : `${e.name}#${round + 1}`;
    return {
      name,
      client: managers[i % endpoints.length]!,
      temperature: round === 0 ? e.temperature : Math.max(e.temperature, 0.7),
      max_tokens: e.max_tokens,
      seed: i,
      calibration: options.calibrations?.[name] ?? null,
    };
  });
}
