export * from "./calibration";
export * from "./clients";
export * from "./panel";
export * from "./parse";
export * from "./rubric";
export * from "./stats";
