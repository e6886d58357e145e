// Task accuracy of each `svc init` template: the base model versus the LoRA
// adapter fine-tuned on the template's train set with the template's own
// settings, both decoded greedily on the template's held-out examples.
//
//   npm run build
//   nice -n 10 node bench/template-accuracy.mjs [--model models/pico-llama] [--template ticket-triage]
//        [--limit N] [--steps N] [--out results.json] [--precision fp32|bf16|auto] [--base-weights int8]
//
// --precision and --base-weights train the adapter that way (docs/training-precision.md);
// the report records them with what the run resolved.
//
// The training settings come from templates/<name>/src/svc/index.ts through the
// SDK and server mapping `svc start` uses (template-accuracy/template-config.mjs).
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  createGenerator,
  loadAdapter,
  loadModel,
  parseToolCalls,
  readDataset,
  toolCallGrammar,
  train,
} from "@svc/engine";
import { scorePii, scoreToolCalls, scoreTriage, toolTurn } from "./template-accuracy/scoring.mjs";
import { readTemplateConfig } from "./template-accuracy/template-config.mjs";

const TEMPLATES_DIR = "templates";
const pct = (x) => (x === null || x === undefined ? "n/a" : `${(100 * x).toFixed(1)}%`);

/**
 * Per template: how its completions are scored, and a trivial answer that
 * takes no model, the bar to clear (every template needs an entry).
 */
const TASKS = {
  "ticket-triage": {
    score: (examples, completions) =>
      scoreTriage(examples.map((e, i) => ({ prediction: completions[i], reference: e.reference }))),
    // The commonest answer of the train set, given to every ticket.
    trivial: (examples, trainRows) => {
      const counts = new Map();
      for (const row of trainRows) {
        const answer = row.messages.at(-1).content;
        counts.set(answer, (counts.get(answer) ?? 0) + 1);
      }
      const commonest = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0][0];
      return { name: `always ${commonest}`, completions: examples.map(() => commonest) };
    },
    describe: (s) =>
      `valid JSON ${pct(s.validJson)}, category ${pct(s.category)}, priority ${pct(s.priority)}, both ${pct(s.bothCorrect)}`,
  },
  "tool-calling": {
    score: (examples, completions) =>
      scoreToolCalls(examples.map((e, i) => ({ prediction: completions[i], reference: e.reference }))),
    // No model: the train set's first turn for the same wording (greeting aside, the order number
    // as a slot), else lookup_order with the first order number, else an answer in text.
    trivial: (examples, trainRows) => {
      const orderId = (text) => /\b[A-Z]\d{4}\b/.exec(text)?.[0];
      const wording = (text) => text.replace(/^(Hi|Hello|Hey team), /, "").replace(/\b[A-Z]\d{4}\b/, "{id}");
      const seen = new Map();
      for (const row of trainRows) {
        const at = row.messages.findIndex((m) => m.role === "assistant");
        const user = row.messages.slice(0, at).findLast((m) => m.role === "user");
        if (user && !seen.has(wording(user.content))) seen.set(wording(user.content), row.messages[at]);
      }
      return {
        name: "the train turn of the same wording, else lookup_order on the first order id",
        completions: examples.map((e) => {
          const id = orderId(e.input);
          const turn = seen.get(wording(e.input));
          const calls =
            turn?.tool_calls ?? (turn ? undefined : id && [{ function: { name: "lookup_order" } }]);
          if (!calls) return toolTurn({ content: turn?.content ?? "" });
          const withId = calls.map((c) => ({
            function: {
              name: c.function.name,
              arguments: JSON.stringify({ ...JSON.parse(c.function.arguments ?? "{}"), order_id: id }),
            },
          }));
          return toolTurn({ tool_calls: withId });
        }),
      };
    },
    describe: (s) =>
      `exact name and arguments ${pct(s.exact)}, right call-or-answer and name ${pct(s.decision)}, called when expected ${pct(s.calledWhenExpected)}`,
  },
  "pii-redaction": {
    score: (examples, completions) =>
      scorePii(
        examples.map((e, i) => ({ input: e.input, prediction: completions[i], reference: e.reference })),
      ),
    // Copying the text unchanged: nothing redacted.
    trivial: (examples) => ({ name: "copy the input", completions: examples.map((e) => e.input) }),
    describe: (s) =>
      `exact ${pct(s.exactMatch)}, leaked values ${pct(s.leakRate)}, ${Object.entries(s.entities)
        .map(([p, e]) => `${p} P ${pct(e.precision)} R ${pct(e.recall)}`)
        .join(", ")}`,
  },
};

function usage(message) {
  console.error(`template-accuracy: ${message}`);
  console.error(
    "usage: node bench/template-accuracy.mjs [--model DIR] [--template NAME]... [--limit N] [--steps N] [--out FILE]",
  );
  process.exit(2);
}

function positiveInt(name, value) {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    usage(`--${name}: expected a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

const { values: args } = parseArgs({
  options: {
    model: { type: "string", default: "models/pico-llama" },
    template: { type: "string", multiple: true },
    limit: { type: "string" },
    steps: { type: "string" },
    out: { type: "string" },
    precision: { type: "string", default: "fp32" },
    "base-weights": { type: "string" },
  },
});
const limit = positiveInt("limit", args.limit);
const stepsOverride = positiveInt("steps", args.steps);
const modelDir = resolve(args.model);
if (!existsSync(join(modelDir, "config.json"))) usage(`--model: no config.json in ${modelDir}`);

const available = readdirSync(TEMPLATES_DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(TEMPLATES_DIR, d.name, "src", "svc", "index.ts")))
  .map((d) => d.name)
  .sort();
const templates = args.template ?? available;
for (const t of templates) {
  if (!available.includes(t))
    usage(`--template: unknown template ${JSON.stringify(t)} (have ${available.join(", ")})`);
  if (!TASKS[t]) usage(`--template: no task metric for ${t}; add one to TASKS`);
}

/**
 * A held-out chat row as prompt messages, the user's text and the reference assistant turn.
 * A row with tools is cut before its first assistant turn, whose calls (or text) are the reference.
 */
function heldOutExample(row, index, file) {
  if (row.tools !== undefined) {
    const at = row.messages.findIndex((m) => m.role === "assistant");
    const prompt = row.messages.slice(0, at);
    const user = prompt.findLast((m) => m.role === "user");
    return {
      messages: prompt,
      tools: row.tools,
      input: user?.content ?? "",
      reference: toolTurn(row.messages[at]),
    };
  }
  const messages = row.messages;
  const last = messages?.at(-1);
  if (!messages || last.role !== "assistant")
    throw new Error(`${file}: row ${index + 1}: expected chat messages ending with the assistant's answer`);
  const prompt = messages.slice(0, -1);
  const user = prompt.findLast((m) => m.role === "user");
  return { messages: prompt, input: user?.content ?? "", reference: last.content };
}

/**
 * Greedy completions of every example, run concurrently on the generator's batch.
 * An example with tools is served as the edge serves tool_choice "auto" (the
 * tools in the prompt, calls constrained once started) and read back with toolTurn.
 */
async function decodeAll(generator, tokenizer, examples, adapter, maxTokens) {
  const started = performance.now();
  const results = await Promise.all(
    examples.map((e) => {
      if (e.tools === undefined)
        return generator.complete({ messages: e.messages, adapter, temperature: 0, maxTokens });
      const text = tokenizer.applyChatTemplate(e.messages, { addGenerationPrompt: true, tools: e.tools });
      const grammar = toolCallGrammar(tokenizer.toolSyntax, { tools: e.tools, toolChoice: "auto" });
      return generator.complete({
        promptIds: tokenizer.encode(text),
        grammar,
        adapter,
        temperature: 0,
        maxTokens,
      });
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const tokens = results.reduce((sum, r) => sum + r.completionTokens, 0);
  const read = (r, e) => {
    if (e.tools === undefined) return r.text;
    const parsed = parseToolCalls(tokenizer.toolSyntax, r.text);
    return toolTurn({ content: parsed.content, tool_calls: parsed.toolCalls });
  };
  return {
    completions: results.map((r, i) => read(r, examples[i])),
    seconds,
    completionTokens: tokens,
    truncated: results.filter((r) => r.finishReason === "length").length,
  };
}

const median = (xs) => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function runTemplate(model, generator, name) {
  const config = await readTemplateConfig(join(TEMPLATES_DIR, name));
  if (!config.evalPath) throw new Error(`${name}: the template has no evalDataset to hold out`);
  const trainSet = await readDataset(config.trainPath);
  const evalRows = await readDataset(config.evalPath);
  const examples = evalRows.slice(0, limit).map((row, i) => heldOutExample(row, i, config.evalPath));
  const hyperparameters = {
    ...config.hyperparameters,
    ...(stepsOverride ? { maxSteps: stepsOverride } : {}),
  };
  // Room for the longest reference plus slack, so a wrong but long answer is still seen whole.
  // (A call's text holds its syntax's tags besides the reference's name and arguments: more slack.)
  const slack = examples.some((e) => e.tools !== undefined) ? 40 : 16;
  const maxTokens = Math.max(...examples.map((e) => model.tokenizer.encode(e.reference).length)) + slack;

  console.log(
    `\n== ${name} (trains ${config.model}): ${trainSet.length} train rows, ${examples.length} held-out examples`,
  );
  console.log(`   hyperparameters: ${JSON.stringify(hyperparameters)}`);

  const base = await decodeAll(generator, model.tokenizer, examples, null, maxTokens);
  console.log(`   base model decoded in ${base.seconds.toFixed(1)} s`);

  const outputDir = mkdtempSync(join(tmpdir(), `svc-bench-${name}-`));
  const tokensPerSecond = [];
  const lossHistory = [];
  let evalLoss = null;
  try {
    const started = performance.now();
    const result = await train({
      model,
      trainSet,
      evalSet: evalRows,
      hyperparameters,
      outputDir,
      precision: args.precision,
      baseWeights: args["base-weights"],
      onProgress: (p) => {
        if (p.loss !== null) tokensPerSecond.push(p.tokensPerSecond);
        if (p.evalLoss !== null) evalLoss = p.evalLoss;
        lossHistory.push({ step: p.step, loss: p.loss, evalLoss: p.evalLoss });
        if (p.step === 1 || p.step % 10 === 0 || p.step === p.totalSteps) {
          const ev = p.evalLoss === null ? "" : ` eval ${p.evalLoss.toFixed(4)}`;
          console.log(
            `   step ${p.step}/${p.totalSteps} loss ${p.loss?.toFixed(4)}${ev} ${p.tokensPerSecond.toFixed(0)} tok/s`,
          );
        }
      },
    });
    const trainSeconds = (performance.now() - started) / 1000;
    const adapter = loadAdapter(result.adapterDir);
    const tuned = await decodeAll(generator, model.tokenizer, examples, adapter, maxTokens);
    console.log(`   adapter decoded in ${tuned.seconds.toFixed(1)} s`);

    const { score, trivial } = TASKS[name];
    const reference = trivial(examples, trainSet);
    return {
      template: name,
      templateModel: config.model,
      examples: examples.length,
      trainRows: trainSet.length,
      hyperparameters,
      fineTune: {
        steps: result.steps,
        wallSeconds: trainSeconds,
        medianTokensPerSecond: median(tokensPerSecond),
        finalLoss: result.finalLoss,
        evalLoss,
        lossHistory,
        precision: result.precision,
      },
      trivial: { name: reference.name, ...score(examples, reference.completions) },
      base: { ...score(examples, base.completions), decode: decodeStats(base) },
      adapter: { ...score(examples, tuned.completions), decode: decodeStats(tuned) },
      outputs: examples.map((e, i) => ({
        input: e.input,
        reference: e.reference,
        base: base.completions[i],
        adapter: tuned.completions[i],
      })),
    };
  } finally {
    rmSync(outputDir, { recursive: true, force: true });
  }
}

function decodeStats(d) {
  return { seconds: d.seconds, completionTokens: d.completionTokens, hitMaxTokens: d.truncated };
}

function printTable(results) {
  const rows = results.map((r) => [
    r.template,
    String(r.examples),
    pct(r.trivial.accuracy),
    pct(r.base.accuracy),
    pct(r.adapter.accuracy),
    `${r.fineTune.wallSeconds.toFixed(1)} s`,
    String(r.fineTune.steps),
    r.fineTune.medianTokensPerSecond.toFixed(0),
  ]);
  const head = [
    "template",
    "examples",
    "no-model acc",
    "base acc",
    "adapter acc",
    "fine-tune",
    "steps",
    "train tok/s",
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join("  ");
  console.log(`\n${line(head)}`);
  for (const r of rows) console.log(line(r));
  for (const r of results) {
    console.log(`\n${r.template}:`);
    const { describe } = TASKS[r.template];
    console.log(`  base     ${describe(r.base)}`);
    console.log(`  adapter  ${describe(r.adapter)}`);
    console.log(`  (no model, ${r.trivial.name}: ${describe(r.trivial)})`);
  }
}

const model = await loadModel(modelDir);
const generator = createGenerator(model, { maxBatch: 16 });
console.log(
  `model ${modelDir} (hidden ${model.config.hiddenSize}, ${model.config.numHiddenLayers} layers, vocab ${model.config.vocabSize}); ` +
    `${cpus().length} CPUs, load average ${loadavg()[0].toFixed(2)}`,
);
const started = new Date().toISOString();
const results = [];
for (const name of templates) results.push(await runTemplate(model, generator, name));
printTable(results);

if (args.out) {
  const report = {
    model: modelDir,
    started,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    loadAverageAtEnd: loadavg()[0],
    limit: limit ?? null,
    stepsOverride: stepsOverride ?? null,
    precision: args.precision,
    baseWeights: args["base-weights"] ?? null,
    results,
  };
  writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${args.out}`);
}
