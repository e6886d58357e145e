import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import type { JobEvent } from "@svc/wire";
import { formatEventLine, formatProgressBar, JobProgressPrinter } from "./progress.js";

const base = { jobId: "j", timestamp: "2026-01-01T00:00:00Z" };
const log = (
  step: number,
  loss: number | null,
  evalLoss: number | null,
  evalTokenAccuracy: number | null = null,
  evalExactMatch: number | null = null,
): JobEvent => ({
  ...base,
  type: "training.log",
  step,
  loss,
  evalLoss,
  evalTokenAccuracy,
  evalExactMatch,
  learningRate: 0.001,
  epoch: 1,
  tokensPerSecond: null,
});

test("plain log lines carry step/total and only numeric losses", () => {
  assert.equal(formatEventLine(log(10, 1.234, 1.456), 60), "step 10/60 loss=1.2340 evalLoss=1.4560");
  assert.equal(formatEventLine(log(10, null, 1.5), 60), "step 10/60 evalLoss=1.5000");
  assert.equal(formatEventLine(log(3, 2, null), null), "step 3 loss=2.0000");
});

test("eval lines carry the task metrics that were computed, as fractions", () => {
  assert.equal(
    formatEventLine(log(10, 1.234, 1.456, 0.8125, 0.5), 60),
    "step 10/60 loss=1.2340 evalLoss=1.4560 evalTokenAccuracy=0.8125 evalExactMatch=0.5000",
  );
  assert.equal(
    formatEventLine(log(10, null, 1.5, 0.25, null), 60),
    "step 10/60 evalLoss=1.5000 evalTokenAccuracy=0.2500",
  );
  assert.equal(
    formatEventLine(log(10, null, 1.5, 0, 1), 60),
    "step 10/60 evalLoss=1.5000 evalTokenAccuracy=0.0000 evalExactMatch=1.0000",
  );
  // An event recorded before the fields existed has neither.
  const old = {
    ...log(4, 2, 3),
    evalTokenAccuracy: undefined,
    evalExactMatch: undefined,
  } as unknown as JobEvent;
  assert.equal(formatEventLine(old, 60), "step 4/60 loss=2.0000 evalLoss=3.0000");
  assert.equal(
    formatProgressBar(
      {
        step: 30,
        totalSteps: 60,
        loss: 1,
        evalLoss: 2,
        evalTokenAccuracy: 0.75,
        evalExactMatch: 0.5,
        tokensPerSecond: 10,
      },
      4,
    ),
    "[##--] 30/60  50%  loss=1.0000  evalLoss=2.0000  evalTokenAccuracy=0.7500  evalExactMatch=0.5000  10 tok/s",
  );
});

test("terminal events read as sentences", () => {
  const completed: JobEvent = {
    ...base,
    type: "training.completed",
    artifacts: [],
    metrics: { steps: 60, finalLoss: 0.5, evalLoss: null, trainSeconds: 12.34 },
  };
  assert.equal(formatEventLine(completed, 60), "completed: 0 artifacts, 60 steps, final loss=0.5000, 12.3s");
  assert.equal(
    formatEventLine({ ...base, type: "training.failed", error: "boom", step: 4 }, 60),
    "failed at step 4: boom",
  );
  assert.equal(formatEventLine({ ...base, type: "end" }, 60), null);
});

test("progress bar fills with the fraction of steps", () => {
  const s = formatProgressBar(
    { step: 30, totalSteps: 60, loss: 1.2345, evalLoss: null, tokensPerSecond: 812.4 },
    10,
  );
  assert.equal(s, "[#####-----] 30/60  50%  loss=1.2345  812 tok/s");
  assert.match(
    formatProgressBar({ step: 60, totalSteps: 60, loss: null, evalLoss: 1, tokensPerSecond: null }, 4),
    /^\[####\] 60\/60 100%/,
  );
});

function sink(isTTY: boolean) {
  let text = "";
  const out = new Writable({
    write(chunk, _enc, cb) {
      text += chunk.toString();
      cb();
    },
  }) as Writable & { isTTY?: boolean };
  out.isTTY = isTTY;
  return { out, text: () => text };
}

test("printer writes plain lines when not a TTY", () => {
  const s = sink(false);
  const p = new JobProgressPrinter(s.out);
  p.event({
    ...base,
    type: "training.started",
    totalSteps: 20,
    baseModel: "svc/pico-llama",
    trainExamples: 8,
    evalExamples: 2,
  });
  p.event(log(10, 1, null));
  p.finish();
  assert.equal(
    s.text(),
    "started: 20 steps, 8 train / 2 eval examples, base model svc/pico-llama\nstep 10/20 loss=1.0000\n",
  );
});

test("the started line counts the rows truncated and dropped to fit maxLength, naming dropped ones", () => {
  const line = formatEventLine(
    {
      ...base,
      type: "training.started",
      totalSteps: 4,
      baseModel: "m",
      trainExamples: 9,
      evalExamples: 0,
      truncatedRows: 1,
      droppedRows: 1,
      rowNotes: [
        { set: "train", row: 10, action: "dropped", reason: "the answer alone needs 300 tokens" },
        { set: "train", row: 9, action: "truncated" },
      ],
    },
    null,
  );
  assert.equal(
    line,
    "started: 4 steps, 9 train / 0 eval examples, base model m; 1 row truncated, 1 row dropped (train row 10)",
  );
});

test("a restarted job's started line names its attempt, the step it starts from and why the one before ended", () => {
  const started = (extra: Partial<Extract<JobEvent, { type: "training.started" }>>) =>
    formatEventLine(
      {
        ...base,
        type: "training.started",
        totalSteps: 60,
        baseModel: "m",
        trainExamples: 16,
        evalExamples: 0,
        ...extra,
      },
      null,
    );
  assert.equal(started({ attempt: 1 }), "started: 60 steps, 16 train / 0 eval examples, base model m");
  assert.equal(
    started({
      attempt: 2,
      resumedFromStep: 0,
      restartedAfter: "the process running this job stopped unexpectedly",
    }),
    "attempt 2 started from step 0; attempt 1 ended: the process running this job stopped unexpectedly\n" +
      "started: 60 steps, 16 train / 0 eval examples, base model m",
  );
  assert.equal(
    started({ attempt: 3, resumedFromStep: 20 }),
    "attempt 3 started from step 20\nstarted: 60 steps, 16 train / 0 eval examples, base model m",
  );
});

test("the bar goes back to the step a restarted attempt starts from", () => {
  const s = sink(true);
  const p = new JobProgressPrinter(s.out);
  const started = {
    ...base,
    type: "training.started",
    totalSteps: 20,
    baseModel: "m",
    trainExamples: 8,
    evalExamples: 0,
  } as const;
  p.event(started);
  p.event(log(12, 1, null));
  p.event({ ...started, attempt: 2, resumedFromStep: 0 });
  p.event(log(1, 2, null));
  p.finish();
  assert.match(s.text(), /attempt 2 started from step 0\nstarted: 20 steps/);
  assert.match(s.text(), /\] {2}1\/20 {3}5% {2}loss=2\.0000\n$/);
  const afterRestart = s.text().slice(s.text().indexOf("attempt 2"));
  assert.doesNotMatch(afterRestart, /12\/20/, "the first attempt's bar is not drawn again");
});

test("printer redraws one bar line on a TTY", () => {
  const s = sink(true);
  const p = new JobProgressPrinter(s.out);
  p.event({
    ...base,
    type: "training.started",
    totalSteps: 20,
    baseModel: "m",
    trainExamples: 8,
    evalExamples: 2,
  });
  p.event(log(5, 2, null));
  p.event(log(10, 1, 1.5, 0.5, 0.25));
  p.event(log(11, 0.9, null));
  p.finish();
  const bars = s
    .text()
    .split("\r\x1b[2K")
    .filter((x) => x.startsWith("["));
  assert.equal(bars.length, 3);
  assert.match(bars[1], /10\/20 +50% {2}loss=1\.0000 {2}evalLoss=1\.5000/);
  // The bar keeps the last eval's values until the next eval.
  assert.match(
    bars[2],
    /11\/20 +55% {2}loss=0\.9000 {2}evalLoss=1\.5000 {2}evalTokenAccuracy=0\.5000 {2}evalExactMatch=0\.2500\n$/,
  );
  assert.ok(s.text().endsWith("\n"));
});

test("a pause and a resume print what happened", () => {
  assert.equal(
    formatEventLine({ ...base, type: "training.paused", step: 12 }, 60),
    "paused at step 12 (POST /v1/jobs/:id/resume resumes it)",
  );
  assert.equal(
    formatEventLine({ ...base, type: "training.paused", step: null }, 60),
    "paused (POST /v1/jobs/:id/resume resumes it)",
  );
  assert.equal(
    formatEventLine({ ...base, type: "training.resumed" }, 60),
    "resumed: queued to go on from its latest checkpoint",
  );
});

test("the started line says what the run trains in: its precision, and an int8 base", () => {
  const started = (extra: Partial<Extract<JobEvent, { type: "training.started" }>>) =>
    formatEventLine(
      {
        ...base,
        type: "training.started",
        totalSteps: 3,
        baseModel: "m",
        trainExamples: 8,
        evalExamples: 0,
        ...extra,
      },
      null,
    );
  assert.equal(
    started({ precision: "bf16", baseWeights: "bf16" }),
    "started: 3 steps, 8 train / 0 eval examples, base model m, in bf16",
  );
  assert.equal(
    started({ precision: "fp32", baseWeights: "int8" }),
    "started: 3 steps, 8 train / 0 eval examples, base model m, in fp32 on an int8 base",
  );
});

test("a DPO step's line adds the held-out preference figures; the bar keeps the latest eval's", () => {
  const figures = { chosenReward: 0.5, rejectedReward: -0.25, margin: 0.75, accuracy: 0.8125 };
  const dpo = { ...log(10, 0.5, 0.4), rewards: figures, evalRewards: { ...figures, loss: 0.4 } } as JobEvent;
  assert.equal(
    formatEventLine(dpo, 60),
    "step 10/60 loss=0.5000 evalLoss=0.4000 evalPreferenceAccuracy=0.8125 evalMargin=0.7500",
  );
  const noEval = { ...log(11, 0.3, null), rewards: figures, evalRewards: null } as JobEvent;
  assert.equal(formatEventLine(noEval, 60), "step 11/60 loss=0.3000");
  const { out, text } = sink(true);
  const printer = new JobProgressPrinter(out, true);
  printer.event(dpo);
  printer.event(noEval);
  assert.match(
    text(),
    /loss=0\.3000 {2}evalLoss=0\.4000 {2}evalPreferenceAccuracy=0\.8125 {2}evalMargin=0\.7500$/,
  );
});
