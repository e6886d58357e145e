// Constrained decoding speed: batch-1 decode tokens/s of the Generator with and
// without a JSON Schema constraint, on the bundled model (its own tokenizer)
// and on the SmolLM2-135M shape (random weights; a byte-level vocabulary of
// 49,152 tokens made from the bundled one's tokens and pairs of them, since no
// SmolLM2 tokenizer ships offline; see largeTokenizer). Both runs sample at temperature 1 with the
// same seeds, and the free run makes as many tokens as the constrained one
// (which stops when its JSON is complete); tokens/s is counted from the first
// streamed token to the last.
//
// Each figure is the median of --reps runs (default 9) in one process, the two
// modes interleaved so they see the same load; the load average is printed.
// The cost is also given in CPU time (the process's user + system time over
// its threads), which other work on a shared machine disturbs less.
// Masks are cached per grammar and state, so the first request under a new
// grammar (reported apart, "cold") pays the vocabulary walks the others reuse.
//
//   npm run build && nice -n 10 node bench/constrained.mjs [--models pico,small] [--tokens N] [--reps N]
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomModelWeights } from "@svc/engine/testing";
import { parseModelConfig } from "../packages/engine/dist/src/families/index.js";
import { createGenerator } from "../packages/engine/dist/src/generation/generate.js";
import { getKernels } from "../packages/engine/dist/src/kernels/index.js";
import { loadModel } from "../packages/engine/dist/src/loading/load.js";
import { loadTokenizer } from "../packages/engine/dist/src/text/tokenizer.js";
import { SHAPES } from "./shapes.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const BUNDLED = join(here, "..", "models", "pico-llama");

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const models = flag("models", "pico,small").split(",");
const reps = Number(flag("reps", "9"));
const tokensOverride = flag("tokens", null);

/** A schema with structure and free text: an order with line items (tool-call arguments of a realistic size). */
const SCHEMA = {
  type: "object",
  properties: {
    customer: { type: "string" },
    priority: { enum: ["low", "normal", "high"] },
    items: {
      type: "array",
      items: {
        type: "object",
        properties: { sku: { type: "string" }, quantity: { type: "integer" }, gift: { type: "boolean" } },
        required: ["sku", "quantity", "gift"],
        additionalProperties: false,
      },
    },
    note: { type: ["string", "null"] },
  },
  required: ["customer", "priority", "items", "note"],
  additionalProperties: false,
};

/**
 * A byte-level vocabulary of `size` tokens: the bundled tokenizer's tokens,
 * then pairs of them. The Hugging Face tokenizers library takes minutes to
 * build a BPE model from such a made-up vocabulary, so this is a Tokenizer
 * object over the byte table (decode = the tokens' bytes as UTF-8, what a
 * byte-level decoder does); encoding and the chat template are the bundled ones.
 */
function largeTokenizer(bundled, size) {
  const base = bundled.tokenBytes();
  const table = [...base];
  const seen = new Set(table.filter(Boolean).map((b) => Buffer.from(b).toString("latin1")));
  const plain = base.map((b, id) => (b ? id : -1)).filter((id) => id >= 0);
  for (let i = 0; table.length < size; i++) {
    const bytes = Buffer.concat([
      base[plain[i % plain.length]],
      base[plain[(Math.floor(i / plain.length) * 7919 + i * 104729) % plain.length]],
    ]);
    const key = bytes.toString("latin1");
    if (seen.has(key)) continue;
    seen.add(key);
    table.push(new Uint8Array(bytes));
  }
  return {
    vocabSize: size,
    bosTokenId: bundled.bosTokenId,
    eosTokenIds: bundled.eosTokenIds,
    padTokenId: bundled.padTokenId,
    maxTokenBytes: Math.max(...table.map((b) => b?.length ?? 0)),
    toolSyntax: bundled.toolSyntax,
    encode: (text) => bundled.encode(text),
    applyChatTemplate: (messages, options) => bundled.applyChatTemplate(messages, options),
    decode: (ids) => Buffer.concat(Array.from(ids, (id) => table[id] ?? new Uint8Array(0))).toString("utf8"),
    tokenBytes: () => table,
  };
}

async function modelOf(name) {
  if (name === "pico") return loadModel(BUNDLED);
  const shape = SHAPES[name];
  if (!shape) throw new Error(`unknown model ${name} (pico, ${Object.keys(SHAPES).join(", ")})`);
  const config = parseModelConfig(shape.config);
  const tokenizer = largeTokenizer(await loadTokenizer(BUNDLED), config.vocabSize);
  return { dir: "<random>", weights: randomModelWeights(config, 1), config, tokenizer, adapter: null };
}

/** One streamed request: tokens/s from the first chunk to the last, and the tokens made. */
async function run(generator, prompt, tokens, seed, grammar) {
  let first = 0;
  let firstCpu = null;
  let count = 0;
  const stream = generator.generate({ promptIds: prompt, temperature: 1, seed, maxTokens: tokens, grammar });
  for await (const _chunk of stream) {
    if (count++ === 0) {
      first = performance.now();
      firstCpu = process.cpuUsage();
    }
  }
  const cpu = process.cpuUsage(firstCpu);
  return {
    perSecond: (count - 1) / ((performance.now() - first) / 1000),
    perCpuSecond: (count - 1) / ((cpu.user + cpu.system) / 1e6),
    count,
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const kernels = getKernels();
console.log(
  `kernels: ${kernels.name} (${kernels.isa}), ${kernels.threads ?? 1} threads; node ${process.version}; load average ${loadavg()[0].toFixed(1)}`,
);
console.log(
  "model | vocab | tokens/run | free tok/s | schema tok/s | cost of the constraint (median of the runs' ratios) | schema tok/s, first request (cold masks)",
);

for (const name of models) {
  const model = await modelOf(name);
  const tokens = Number(tokensOverride ?? (name === "pico" ? 200 : 48));
  const generator = createGenerator(model, { maxContext: 1024 });
  const prompt = model.tokenizer.encode("Write the order as JSON:\n");
  const grammar = { kind: "json", schema: SCHEMA };
  await run(generator, prompt, 8, 0, undefined); // warm-up: JIT and first touch of the weights
  // the first request under a new grammar walks the vocabulary trie for every state it meets
  const cold = await run(generator, prompt, tokens, 99, grammar);
  const frees = [];
  const schemas = [];
  const costs = [];
  const cpuCosts = [];
  let made = 0;
  for (let r = 0; r < reps; r++) {
    // the free run makes as many tokens as the constrained one did: the same positions, the same attention lengths
    const c = await run(generator, prompt, tokens, 100 + r, grammar);
    const f = await run(generator, prompt, c.count, 100 + r, undefined);
    schemas.push(c.perSecond);
    frees.push(f.perSecond);
    costs.push(f.perSecond / c.perSecond - 1);
    cpuCosts.push(f.perCpuSecond / c.perCpuSecond - 1);
    made += c.count;
  }
  console.log(
    `${name} | ${model.config.vocabSize} | ${(made / reps).toFixed(0)} (max ${tokens}) | ${fmt(median(frees))} | ${fmt(median(schemas))} | ${(median(costs) * 100).toFixed(1)}% (CPU time: ${(median(cpuCosts) * 100).toFixed(1)}%) | ${fmt(cold.perSecond)} | load ${loadavg()[0].toFixed(1)}`,
  );
}
