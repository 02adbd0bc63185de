/**
 * A reusable task curriculum: levels 1..N, a window of recent group scores at the current level,
 * and two rules — advance when the window's mean reaches `advance_threshold`, fall back when it
 * drops below `fallback_threshold` (if set). Only scores of the current level count, so feedback
 * that arrives late for an older level does not move it. Its state is plain JSON for the env's
 * checkpoint.
 */
import { z } from "zod";

export const curriculumConfigSchema = z
  .object({
    levels: z.number().int().min(1),
    start_level: z.number().int().min(1).default(1),
    /** Group scores averaged before a decision; the window restarts at each level change. */
    window: z.number().int().positive().default(8),
    advance_threshold: z.number(),
    /** Below this mean the level drops by one; null never falls back. */
    fallback_threshold: z.number().nullable().default(null),
  })
  .refine((c) => c.start_level <= c.levels, {
    message: "start_level must be at most levels",
    path: ["start_level"],
  })
  .refine((c) => c.fallback_threshold === null || c.fallback_threshold < c.advance_threshold, {
    message: "fallback_threshold must be below advance_threshold",
    path: ["fallback_threshold"],
  });
export type CurriculumConfig = z.input<typeof curriculumConfigSchema>;

export interface CurriculumState {
  level: number;
  window: number[];
  [key: string]: number | number[];
}

export type CurriculumChange = "advanced" | "fell_back" | null;

export class Curriculum {
  private readonly config: z.output<typeof curriculumConfigSchema>;
  private current: number;
  private scores: number[] = [];

  constructor(config: CurriculumConfig) {
    this.config = curriculumConfigSchema.parse(config);
    this.current = this.config.start_level;
  }

  get level(): number {
    return this.current;
  }

  get levels(): number {
    return this.config.levels;
  }

  /** Feeds one group's mean score for an item drawn at `level`; says whether the level moved. */
  record(level: number, meanScore: number): CurriculumChange {
    if (level !== this.current || !Number.isFinite(meanScore)) return null;
    this.scores.push(meanScore);
    if (this.scores.length > this.config.window) this.scores.shift();
    if (this.scores.length < this.config.window) return null;
    const mean = this.scores.reduce((a, b) => a + b, 0) / this.scores.length;
    if (mean >= this.config.advance_threshold && this.current < this.config.levels) {
      this.current++;
      this.scores = [];
      return "advanced";
    }
    const fallback = this.config.fallback_threshold;
    if (fallback !== null && mean < fallback && this.current > 1) {
      this.current--;
      this.scores = [];
      return "fell_back";
    }
    return null;
  }

  checkpoint(): CurriculumState {
    return { level: this.current, window: [...this.scores] };
  }

  /** Restores a checkpoint; values out of range are clamped, a missing one keeps the current. */
  restore(state: { level?: unknown; window?: unknown }): void {
    const level = Number(state.level);
    if (Number.isInteger(level)) this.current = Math.min(this.config.levels, Math.max(1, level));
    this.scores = Array.isArray(state.window)
      ? state.window.map(Number).filter(Number.isFinite).slice(-this.config.window)
      : [];
  }
}
