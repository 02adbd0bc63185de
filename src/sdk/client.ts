/**
 * `atropos-edge/client`: the trainer client (lease/ack batches, policy versions, stats) and the
 * admin client (tokens, inference servers, run controls), on one HTTP base with one error class
 * (`ApiResponseError`; `TrainerApiError` and `AdminApiError` are its other names).
 */
export {
  AdminApiError,
  AdminClient,
  type AdminClientOptions,
} from "../client/admin-client";
export {
  type DeliveredGroup,
  type GroupPage,
  type LeasedBatch,
  type LeasedGroupInfo,
  type LeaseResult,
  type RunStats,
  TrainerApiError,
  TrainerClient,
  type TrainerClientOptions,
  type TrainerRegistration,
} from "../client/trainer-client";
export { ApiResponseError } from "../core/wire/http-client";
export {
  type GroupTrajectories,
  groupTrajectoriesSchema,
  type Trajectory,
  type TrajectoryStep,
  type TrajectoryToolCall,
  trajectorySchema,
} from "../core/wire/trajectory";
