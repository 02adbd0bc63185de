/**
 * A panel of judges: each judge is its own endpoint and model. Pointwise mode asks every judge
 * about every trajectory (five-dimension rubric → composite 0..1); ranking mode asks every judge
 * once per group for relative scores. Each judge's scores pass through its calibration, the panel
 * score per answer is the trimmed mean of the judges that answered, and the group's report keeps
 * per-judge scores, failures and the judges' agreement (mean pairwise Kendall's tau).
 */
import { errorMessage } from "../../core/errors";
import {
  DEFAULT_RUBRIC_WEIGHTS,
  type JudgeCalibration,
  type JudgeMode,
  type JudgeReport,
  type RubricWeights,
} from "../../core/wire/judge-schemas";
import type { InferenceClient } from "../../inference/types";
import { applyCalibration, fitCalibration, type LabelledScore } from "./calibration";
import { parseRankingReply, parseRubricReply } from "./parse";
import { type JudgeInput, rankingPrompt, rubricPrompt } from "./rubric";
import { meanPairwiseTau, trimmedMean } from "./stats";

export interface PanelJudge {
  name: string;
  client: Pick<InferenceClient, "chatCompletion">;
  temperature?: number;
  max_tokens?: number;
  /** Sent with every call (judges that share an endpoint differ by seed). */
  seed?: number;
  calibration?: JudgeCalibration | null;
}

export interface PanelOptions {
  weights?: RubricWeights;
  /** Answers with fewer scoring judges get no panel score (null). */
  minJudges?: number;
}

export interface GroupJudgement {
  /** Panel score per answer, 0..1; null when fewer than minJudges judges scored it. */
  scores: (number | null)[];
  report: JudgeReport;
}

/** Per-call additions: task-specific criteria and rubric weights (default: the panel's). */
export interface JudgeAsk {
  criteria?: string;
  weights?: RubricWeights;
}

type Outcome = { ok: true; scores: number[] } | { ok: false; reason: string };

const reasonOf = (err: unknown) => errorMessage(err).slice(0, 300);

export class JudgePanel {
  readonly judges: PanelJudge[];
  private readonly weights: RubricWeights;
  private readonly minJudges: number;

  constructor(judges: PanelJudge[], options: PanelOptions = {}) {
    if (judges.length === 0) throw new Error("a judge panel needs at least one judge");
    const names = new Set(judges.map((j) => j.name));
    if (names.size !== judges.length) throw new Error("judge names must be distinct");
    this.judges = judges;
    this.weights = options.weights ?? DEFAULT_RUBRIC_WEIGHTS;
    this.minJudges = Math.min(options.minJudges ?? 1, judges.length);
  }

  private async ask(judge: PanelJudge, messages: { role: string; content: string }[]) {
    const res = await judge.client.chatCompletion({
      messages,
      n: 1,
      temperature: judge.temperature ?? 0,
      max_tokens: judge.max_tokens ?? 512,
      ...(judge.seed === undefined ? {} : { seed: judge.seed }),
      split: "eval",
    });
    return res.choices[0]?.message.content ?? "";
  }

  /** One judge's raw (uncalibrated) score of one trajectory. */
  async pointwise(judge: PanelJudge, input: JudgeInput, ask: JudgeAsk = {}): Promise<Outcome> {
    try {
      const reply = await this.ask(
        judge,
        rubricPrompt(input, { judgeName: judge.name, criteria: ask.criteria }),
      );
      const parsed = parseRubricReply(reply, ask.weights ?? this.weights);
      return parsed.ok ? { ok: true, scores: [parsed.score] } : parsed;
    } catch (err) {
      return { ok: false, reason: reasonOf(err) };
    }
  }

  /** One judge's raw relative scores of a whole group, in one call. */
  async ranking(
    judge: PanelJudge,
    inputs: readonly JudgeInput[],
    ask: JudgeAsk = {},
  ): Promise<Outcome> {
    try {
      const reply = await this.ask(
        judge,
        rankingPrompt(inputs, { judgeName: judge.name, criteria: ask.criteria }),
      );
      const parsed = parseRankingReply(reply, inputs.length);
      return parsed.ok ? { ok: true, scores: parsed.scores } : parsed;
    } catch (err) {
      return { ok: false, reason: reasonOf(err) };
    }
  }

  /**
   * Raw scores [judge][answer] (null = failed) with the failures, before calibration.
   * Pointwise makes judges × answers calls, ranking one call per judge.
   */
  async rawScores(
    inputs: readonly JudgeInput[],
    mode: JudgeMode,
    ask: JudgeAsk = {},
  ): Promise<{ raw: (number | null)[][]; failures: JudgeReport["failures"]; calls: number }> {
    const failures: JudgeReport["failures"] = [];
    if (mode === "ranking") {
      const outcomes = await Promise.all(this.judges.map((j) => this.ranking(j, inputs, ask)));
      const raw = outcomes.map((o, j) => {
        if (o.ok) return o.scores;
        failures.push({ judge: this.judges[j]!.name, answer: null, reason: o.reason });
        return inputs.map(() => null);
      });
      return { raw, failures, calls: this.judges.length };
    }
    const raw = await Promise.all(
      this.judges.map(async (judge) =>
        Promise.all(
          inputs.map(async (input, a) => {
            const o = await this.pointwise(judge, input, ask);
            if (o.ok) return o.scores[0]!;
            failures.push({ judge: judge.name, answer: a, reason: o.reason });
            return null;
          }),
        ),
      ),
    );
    failures.sort((x, y) => x.judge.localeCompare(y.judge) || (x.answer ?? -1) - (y.answer ?? -1));
    return { raw, failures, calls: this.judges.length * inputs.length };
  }

  /** Scores a group's answers: calibrated per judge, trimmed mean across judges. */
  async scoreGroup(
    inputs: readonly JudgeInput[],
    mode: JudgeMode = "pointwise",
    ask: JudgeAsk = {},
  ): Promise<GroupJudgement> {
    const { raw, failures, calls } = await this.rawScores(inputs, mode, ask);
    const scores = raw.map((row, j) =>
      row.map((x) => (x === null ? null : applyCalibration(x, this.judges[j]!.calibration))),
    );
    const panel = inputs.map((_, a) => {
      const got = scores
        .map((row) => row[a])
        .filter((x): x is number => x !== null && x !== undefined);
      return got.length >= this.minJudges && got.length > 0 ? trimmedMean(got) : null;
    });
    return {
      scores: panel,
      report: {
        mode,
        judges: this.judges.map((j) => j.name),
        scores,
        panel,
        failures,
        kendall_tau: meanPairwiseTau(scores),
        calibrated: this.judges.filter((j) => j.calibration?.accepted).map((j) => j.name),
        calls,
      },
    };
  }

  /**
   * Fits each judge's calibration on labelled trajectories (pointwise) and applies the accepted
   * ones. A judge that failed on too many items keeps no calibration (its entry says why).
   */
  async calibrate(
    labelled: readonly { input: JudgeInput; label: number }[],
    options: { heldoutEvery?: number } = {},
  ): Promise<Record<string, JudgeCalibration | { error: string }>> {
    const { raw } = await this.rawScores(
      labelled.map((l) => l.input),
      "pointwise",
    );
    const out: Record<string, JudgeCalibration | { error: string }> = {};
    this.judges.forEach((judge, j) => {
      const points: LabelledScore[] = [];
      raw[j]!.forEach((x, i) => {
        if (x !== null) points.push({ raw: x, label: labelled[i]!.label });
      });
      try {
        const fitted = fitCalibration(points, options);
        out[judge.name] = fitted;
        judge.calibration = fitted;
      } catch (err) {
        out[judge.name] = { error: `${judge.name}: ${reasonOf(err)}` };
        judge.calibration = null;
      }
    });
    return out;
  }
}
