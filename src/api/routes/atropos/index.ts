/**
 * The Atropos rollout API, path for path (docs/API.md, docs/COMPATIBILITY.md), with its bugs fixed.
 * Mounted at the root (run "default") and under /runs/{run}.
 */
import type { ApiRoute } from "../define";
import { batch } from "./batch";
import { disconnectEnv } from "./disconnect-env";
import { info } from "./info";
import { latestExample } from "./latest-example";
import { register } from "./register";
import { registerEnv } from "./register-env";
import { resetDataGet, resetDataPost } from "./reset-data";
import { root } from "./root";
import { scoredData } from "./scored-data";
import { scoredDataList } from "./scored-data-list";
import { status } from "./status";
import { statusEnv } from "./status-env";
import { wandbInfo } from "./wandb-info";

export const atroposRoutes: readonly ApiRoute[] = [
  root,
  register,
  registerEnv,
  disconnectEnv,
  wandbInfo,
  info,
  batch,
  latestExample,
  scoredData,
  scoredDataList,
  status,
  statusEnv,
  resetDataGet,
  resetDataPost,
];
