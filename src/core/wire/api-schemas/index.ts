/**
 * Response shapes of the rollout API, one file per resource. The routes declare them (so
 * /openapi.json documents them) and the clients parse answers with them and take their types from
 * them, so the server and its clients share one definition of each answer.
 */
export * from "./atropos";
export * from "./batches";
export * from "./env-workers";
export * from "./errors";
export * from "./groups";
export * from "./inference";
export * from "./metrics";
export * from "./run-controls";
export * from "./runs";
