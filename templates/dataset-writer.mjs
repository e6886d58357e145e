// What every template's dataset generator shares: a seeded PRNG, pick(), and
// write(), which draws a template's rows and writes data/{train,eval}.jsonl.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** mulberry32: a small, well-known 32-bit PRNG; same seed, same datasets. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = (r, xs) => xs[Math.floor(r() * xs.length)];

/** The user's messages of a row (a chat, a prompt row or a preference pair in OpenAI's form). */
const userText = (row) =>
  (row.messages ?? row.input.messages)
    .filter((m) => m.role === "user")
    .map((m) => m.content)
    .join("\n");

/**
 * Draws trainRows rows, then evalRows held-out ones (makeRow(r, true)); with
 * distinctEval, a held-out row whose user messages a row before it has is drawn again.
 */
export function write(template, makeRow, seed, trainRows, evalRows, { distinctEval = false } = {}) {
  const r = rng(seed);
  const rows = Array.from({ length: trainRows }, () => makeRow(r));
  const seen = new Set(rows.map(userText));
  while (rows.length < trainRows + evalRows) {
    const row = makeRow(r, true);
    if (distinctEval && seen.has(userText(row))) continue;
    seen.add(userText(row));
    rows.push(row);
  }
  const dir = join(here, template, "data");
  mkdirSync(dir, { recursive: true });
  const jsonl = (xs) => `${xs.map((x) => JSON.stringify(x)).join("\n")}\n`;
  writeFileSync(join(dir, "train.jsonl"), jsonl(rows.slice(0, trainRows)));
  writeFileSync(join(dir, "eval.jsonl"), jsonl(rows.slice(trainRows)));
  console.log(`${template}: ${trainRows} train + ${evalRows} eval rows (seed ${seed})`);
}
