/**
 * Deterministic randomness shared by envs, the simulator and exports: FNV-1a hashing for seeds
 * and mulberry32, whose whole state is one 32-bit number (easy to checkpoint).
 */

/** FNV-1a hash of a string → uint32 (for seeding from text). */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** FNV-1a over typed, separated parts, so ("a", 1) and ("a1") hash differently. */
export function hashParts(...parts: (string | number)[]): number {
  return hashString(parts.map((part) => `${typeof part}:${part}\u0000`).join(""));
}

/** One mulberry32 step: the next state and a value in [0, 1). */
function mulberry32Step(state: number): [number, number] {
  const next = (state + 0x6d2b79f5) >>> 0;
  let t = next;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return [next, ((t ^ (t >>> 14)) >>> 0) / 4294967296];
}

export function mulberry32(seed: number): () => number {
  const rng = new SeededRng(seed);
  return () => rng.next();
}

export function seededRng(...parts: (string | number)[]): () => number {
  return mulberry32(hashParts(...parts));
}

/** mulberry32 with a saveable `state` and a few sampling helpers. */
export class SeededRng {
  state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    const [state, value] = mulberry32Step(this.state);
    this.state = state;
    return value;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
    return items;
  }
}
