/**
 * D1 schema: the system of record for run, env, group, batch and lease metadata, one file per
 * concern. Group payload bytes live in R2, or inline in their row when small (payloads.ts).
 * drizzle-kit reads every file of this folder (drizzle.config.ts).
 */
export * from "./access";
export * from "./groups";
export * from "./runs";
export * from "./training";
