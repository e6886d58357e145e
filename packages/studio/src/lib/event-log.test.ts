import assert from "node:assert/strict";
import { test } from "node:test";
import { appendLogEntry, EVENT_LOG_LIMIT, type EventLogEntry, formatEventMessage } from "./event-log.js";

const msg = (event: string, payload: Record<string, unknown>) =>
  formatEventMessage(event, payload, JSON.stringify(payload));

test("training.log: step then the numeric fields only", () => {
  assert.equal(msg("training.log", { step: 5, loss: 1.25, evalLoss: null }), "step=5 loss=1.25");
  assert.equal(
    msg("training.log", { step: 10, loss: 1.5, evalLoss: 1.75 }),
    "step=10 loss=1.5 evalLoss=1.75",
  );
  assert.equal(msg("training.log", { step: 10, loss: null, evalLoss: 1.75 }), "step=10 evalLoss=1.75");
  assert.equal(msg("training.log", { step: 3 }), "step=3");
});

test("checkpoint.saved reads step=<n>", () => {
  assert.equal(msg("checkpoint.saved", { step: 20, artifact: { name: "checkpoint-20" } }), "step=20");
});

test("training.completed counts artifacts with singular and plural", () => {
  assert.equal(msg("training.completed", { artifacts: [{}] }), "1 artifact");
  assert.equal(msg("training.completed", { artifacts: [{}, {}, {}] }), "3 artifacts");
  assert.equal(msg("training.completed", { artifacts: [] }), "0 artifacts");
});

test("training.started shows the raw JSON; training.failed the error string", () => {
  const raw = '{"type":"training.started","totalSteps":40}';
  assert.equal(formatEventMessage("training.started", JSON.parse(raw), raw), raw);
  assert.equal(
    msg("training.failed", { error: "dataset.jsonl line 3: missing messages" }),
    "dataset.jsonl line 3: missing messages",
  );
});

test("the log keeps only the newest 500 entries", () => {
  assert.equal(EVENT_LOG_LIMIT, 500);
  let log: EventLogEntry[] = [];
  for (let i = 0; i < 620; i++)
    log = appendLogEntry(log, {
      key: String(i),
      event: "training.log",
      message: `step=${i}`,
      timestamp: null,
    });
  assert.equal(log.length, 500);
  assert.equal(log[0].key, "120");
  assert.equal(log[499].key, "619");
});

test("a download's progress rows update one row while they follow one another; its completion is a row of its own", () => {
  const row = (key: string, event: string, group?: string): EventLogEntry => ({
    key,
    event,
    message: key,
    timestamp: null,
    group,
  });
  let log: EventLogEntry[] = [];
  log = appendLogEntry(log, row("1", "download.progress", "download:model:org/m"));
  log = appendLogEntry(log, row("2", "download.progress", "download:model:org/m"));
  log = appendLogEntry(log, row("3", "download.progress", "download:dataset:org/d"));
  log = appendLogEntry(log, row("4", "download.completed"));
  log = appendLogEntry(log, row("5", "download.progress", "download:dataset:org/d"));
  assert.deepEqual(
    log.map((e) => e.key),
    ["2", "3", "4", "5"],
  );
  assert.equal(
    formatEventMessage(
      "download.completed",
      { kind: "model", repo: "org/m", bytes: 1e6, fromCache: true },
      "",
    ),
    "model org/m: in the cache (1 MB)",
  );
});

test("pause and resume read as what happened", () => {
  assert.equal(msg("training.paused", { step: 3 }), "paused at step=3");
  assert.equal(msg("training.paused", { step: null }), "paused");
  assert.equal(msg("training.resumed", {}), "resumed from the latest checkpoint");
});
