/**
 * Template generator for the bundled gsm8k_lite dataset (GSM8K-style word problems with exact
 * integer answers). Deterministic: the same seed always yields the same problems.
 * Regenerate the bundled files with `npx tsx src/envs/data/write-gsm8k-lite.ts`.
 */
import { SeededRng } from "../../sdk/env";

export interface MathProblem {
  id: string;
  question: string;
  /** GSM8K format: worked solution ending in "#### <answer>". */
  answer: string;
}

const NAMES = [
  "Ava",
  "Ben",
  "Chloe",
  "Diego",
  "Emma",
  "Farid",
  "Grace",
  "Hiro",
  "Isla",
  "Jamal",
  "Kira",
  "Liam",
  "Maya",
  "Noah",
  "Olga",
  "Priya",
];
const FRUITS = ["apples", "oranges", "pears", "plums", "lemons", "peaches"];
const ITEMS = ["notebooks", "pens", "mugs", "candles", "posters", "stickers"];

type Template = (rng: SeededRng) => { question: string; steps: string; result: number };

const TEMPLATES: Template[] = [
  (r) => {
    const name = r.pick(NAMES);
    const fruit = r.pick(FRUITS);
    const a = r.int(3, 40);
    const b = r.int(2, 9);
    const c = r.int(3, 12);
    return {
      question: `${name} has ${a} ${fruit}. ${name} buys ${b} bags with ${c} ${fruit} in each bag. How many ${fruit} does ${name} have now?`,
      steps: `The bags hold ${b} * ${c} = ${b * c} ${fruit}. In total ${a} + ${b * c} = ${a + b * c}.`,
      result: a + b * c,
    };
  },
  (r) => {
    const name = r.pick(NAMES);
    const item = r.pick(ITEMS);
    const price = r.int(2, 15);
    const n = r.int(2, 6);
    const bill = [50, 100][r.int(0, 1)]!;
    return {
      question: `A shop sells ${item} for $${price} each. ${name} buys ${n} ${item} and pays with a $${bill} bill. How many dollars of change does ${name} get?`,
      steps: `The ${item} cost ${n} * ${price} = ${n * price} dollars. Change is ${bill} - ${n * price} = ${bill - n * price}.`,
      result: bill - n * price,
    };
  },
  (r) => {
    const name = r.pick(NAMES);
    const a = r.int(5, 30);
    const d = r.int(2, 7);
    const b = r.int(5, 30);
    const e = r.int(2, 7);
    return {
      question: `${name} reads ${a} pages a day for ${d} days and then ${b} pages a day for ${e} days. How many pages does ${name} read in total?`,
      steps: `First ${a} * ${d} = ${a * d} pages, then ${b} * ${e} = ${b * e} pages. Total ${a * d} + ${b * e} = ${a * d + b * e}.`,
      result: a * d + b * e,
    };
  },
  (r) => {
    const n = r.int(1, 6) * 20;
    const pct = r.int(1, 19) * 5;
    const girls = (n * pct) / 100;
    return {
      question: `A school club has ${n} members. ${pct}% of the members are girls. How many members are boys?`,
      steps: `Girls: ${n} * ${pct} / 100 = ${girls}. Boys: ${n} - ${girls} = ${n - girls}.`,
      result: n - girls,
    };
  },
  (r) => {
    const name = r.pick(NAMES);
    const w = r.int(9, 25);
    const h = r.int(10, 40);
    const k = r.int(2, 5);
    return {
      question: `${name} earns $${w} per hour and works ${h} hours each week. How many dollars does ${name} earn in ${k} weeks?`,
      steps: `One week pays ${w} * ${h} = ${w * h}. ${k} weeks pay ${w * h} * ${k} = ${w * h * k}.`,
      result: w * h * k,
    };
  },
  (r) => {
    const b = r.int(4, 12);
    const boxes = r.int(3, 20);
    const extra = r.int(0, b - 1);
    const a = b * boxes + extra;
    return {
      question: `A baker makes ${a} cookies and packs them into boxes of ${b}. How many full boxes can the baker fill?`,
      steps: `${a} / ${b} = ${boxes} full boxes with ${extra} left over.`,
      result: boxes,
    };
  },
  (r) => {
    const name = r.pick(NAMES);
    const start = r.int(40, 200);
    const spent = r.int(5, 30);
    const times = r.int(2, 4);
    const gift = r.int(5, 50);
    const result = start - spent * times + gift;
    return {
      question: `${name} has $${start} saved. ${name} spends $${spent} on ${times} different days, then receives a $${gift} gift. How many dollars does ${name} have now?`,
      steps: `Spent ${spent} * ${times} = ${spent * times}. ${start} - ${spent * times} + ${gift} = ${result}.`,
      result,
    };
  },
  (r) => {
    const rows = r.int(3, 12);
    const seats = r.int(4, 15);
    const taken = r.int(1, rows * seats - 1);
    return {
      question: `A theater has ${rows} rows with ${seats} seats in each row. ${taken} seats are taken. How many seats are empty?`,
      steps: `Seats: ${rows} * ${seats} = ${rows * seats}. Empty: ${rows * seats} - ${taken} = ${rows * seats - taken}.`,
      result: rows * seats - taken,
    };
  },
];

export function generateGsm8kLite(count = 200, seed = 8_128): MathProblem[] {
  const rng = new SeededRng(seed);
  const seen = new Set<string>();
  const out: MathProblem[] = [];
  for (let attempt = 0; out.length < count && attempt < count * 20; attempt++) {
    const template = TEMPLATES[attempt % TEMPLATES.length]!;
    const { question, steps, result } = template(rng);
    if (seen.has(question)) continue;
    seen.add(question);
    out.push({ id: `gsm8k-lite-${out.length}`, question, answer: `${steps}\n#### ${result}` });
  }
  return out;
}

export function toJsonl(problems: MathProblem[]): string {
  return `${problems.map((p) => JSON.stringify(p)).join("\n")}\n`;
}
