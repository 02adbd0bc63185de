/** Aggregation across judges: a trimmed mean and rank agreement (Kendall's tau). */

/** Mean after dropping the lowest and highest value when there are at least three. */
export function trimmedMean(values: readonly number[]): number {
  if (values.length === 0) throw new Error("trimmedMean of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const kept = sorted.length >= 3 ? sorted.slice(1, -1) : sorted;
  return kept.reduce((a, b) => a + b, 0) / kept.length;
}

/**
 * Kendall's tau-b of two equally long score lists (ties corrected); null when either list is
 * constant or shorter than two, where agreement is undefined.
 */
export function kendallTau(a: readonly number[], b: readonly number[]): number | null {
  if (a.length !== b.length) throw new Error("kendallTau: lists of different lengths");
  let concordant = 0;
  let discordant = 0;
  let tiesA = 0;
  let tiesB = 0;
  for (let i = 0; i < a.length; i++) {
    for (let j = i + 1; j < a.length; j++) {
      const da = Math.sign(a[i]! - a[j]!);
      const db = Math.sign(b[i]! - b[j]!);
      if (da === 0 && db === 0) continue;
      if (da === 0) tiesA++;
      else if (db === 0) tiesB++;
      else if (da === db) concordant++;
      else discordant++;
    }
  }
  const denominator = Math.sqrt(
    (concordant + discordant + tiesA) * (concordant + discordant + tiesB),
  );
  return denominator === 0 ? null : (concordant - discordant) / denominator;
}

/**
 * Mean Kendall's tau over every pair of judges, each pair compared on the answers both scored
 * (rows: judges, columns: answers, null = no score); null when no pair is comparable.
 */
export function meanPairwiseTau(scores: readonly (readonly (number | null)[])[]): number | null {
  const taus: number[] = [];
  for (let i = 0; i < scores.length; i++) {
    for (let j = i + 1; j < scores.length; j++) {
      const a: number[] = [];
      const b: number[] = [];
      scores[i]!.forEach((x, k) => {
        const y = scores[j]![k];
        if (x !== null && y !== null && y !== undefined) {
          a.push(x);
          b.push(y);
        }
      });
      const tau = a.length >= 2 ? kendallTau(a, b) : null;
      if (tau !== null) taus.push(tau);
    }
  }
  return taus.length === 0 ? null : taus.reduce((x, y) => x + y, 0) / taus.length;
}
