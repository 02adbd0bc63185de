/**
 * agent_tasks' evaluate(): every task it serves, eval_samples_per_item episodes each, scored as
 * in training (reference answers, hidden tests in the sandbox, the judge panel). A sample is
 * correct when the answer is right (every test passed) or, for judged tasks, when its judged
 * score reaches eval_pass_score. A task whose judging fails (too few judges) counts as wrong and
 * in eval/unscored, so the regression guard sees the failure instead of a gap.
 */
import {
  DropGroupError,
  type EvalResult,
  samplesPerItemMetrics,
  type Task,
  type TrajectoryStep,
  z,
} from "../sdk/env";

/** Config fields of the evaluation (spread into agent_tasks' config schema). */
export const AGENT_EVAL_CONFIG = {
  /** Judged tasks: a sample whose score (0–1) reaches this counts as correct. */
  eval_pass_score: z.number().min(0).max(1).default(0.6),
};

interface EvalEpisode {
  steps: TrajectoryStep[];
  finalResponse: string | null;
}

/** What evaluation needs from the env (the env passes itself). */
export interface EvaluableAgentEnv {
  readonly tasks: readonly Task[];
  readonly config: { eval_samples_per_item: number; eval_pass_score: number };
  runEpisode(task: Task, episode: number): Promise<EvalEpisode>;
  evaluateEpisodes(
    task: Task,
    episodes: readonly EvalEpisode[],
  ): Promise<{ scores: number[]; success: (boolean | null)[]; judgeScores: (number | null)[] }>;
}

type MapEval = <T, R>(items: readonly T[], fn: (item: T) => Promise<R>) => Promise<R[]>;

export async function evaluateAgentTasks(
  env: EvaluableAgentEnv,
  mapEval: MapEval,
): Promise<EvalResult> {
  const k = env.config.eval_samples_per_item;
  const pairs = env.tasks.flatMap((task) =>
    Array.from({ length: k }, (_, sample) => ({ task, sample })),
  );
  const episodes = await mapEval(pairs, (p) => env.runEpisode(p.task, p.sample));
  const correct: number[] = [];
  const samples: Record<string, unknown>[] = [];
  const scores: number[] = [];
  let unscored = 0;
  for (const [index, task] of env.tasks.entries()) {
    const own = episodes.slice(index * k, (index + 1) * k);
    const judged = await env.evaluateEpisodes(task, own).catch((err: unknown) => {
      if (err instanceof DropGroupError) return null;
      throw err;
    });
    if (!judged) unscored++;
    let right = 0;
    own.forEach((episode, sample) => {
      const score = judged?.scores[sample] ?? 0;
      const success = judged?.success[sample] ?? null;
      const ok = judged !== null && (success ?? score >= env.config.eval_pass_score);
      if (ok) right++;
      scores.push(score);
      samples.push({
        item_index: index,
        sample,
        task_id: task.id,
        task_type: task.task_type,
        difficulty: task.difficulty,
        final_response: episode.finalResponse,
        tool_calls: episode.steps.filter((s) => s.tool_call).length,
        score: judged ? score : null,
        correct: ok,
      });
    });
    correct.push(right);
  }
  const mean = scores.reduce((a, b) => a + b, 0) / Math.max(1, scores.length);
  return {
    metrics: {
      ...samplesPerItemMetrics(correct, k),
      "eval/mean_score": mean,
      "eval/unscored": unscored,
    },
    samples,
  };
}
