export { AccuracyReward } from "./accuracy";
export * from "./advantages";
export { FormatReward, isThinkingFormat, ThinkingFormatReward } from "./format";
export * from "./length-penalty";
export * from "./math";
export { ReasoningStepsReward } from "./reasoning-steps";
export { CombinedReward, RewardRegistry, type RewardSpec, rewardRegistry } from "./registry";
export { RepetitionPenaltyReward } from "./repetition";
export * from "./types";
