/** `atropos-edge/client`: the trainer client (lease/ack batches, policy versions, stats). */
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
export {
  type GroupTrajectories,
  groupTrajectoriesSchema,
  type Trajectory,
  type TrajectoryStep,
  type TrajectoryToolCall,
  trajectorySchema,
} from "../core/trajectory";
