// Long rows through `svc server`: a dataset with outliers trains, and
// training.started says what was truncated and dropped (docs/datasets.md#truncation);
// "strict" fails the job naming the row.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  chatJsonl,
  createJob,
  eventsUntilEnd,
  newIdentity,
  type ServerProcess,
  type SseFrame,
  serverFor,
  uploadDataset,
} from "./harness.js";

const long = (word: string, n: number) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(" ");
// Rows 1-8 fit; row 9's question is long (truncated, kept); row 10's answer alone is too long (dropped).
const DATASET =
  chatJsonl(8) +
  [
    { prompt: `${long("mail", 200)} Which folder?`, completion: "inbox" },
    { prompt: "Summarize.", completion: long("word", 200) },
  ]
    .map((row) => JSON.stringify(row))
    .join("\n");

const payload = (frames: SseFrame[], event: string) => {
  const frame = frames.find((f) => f.event === event);
  assert.ok(frame, `a ${event} event in ${frames.map((f) => f.event).join(", ")}`);
  return JSON.parse(frame.data);
};

describe("truncation through svc server (sqlite)", () => {
  let server: ServerProcess & { cleanup(): Promise<void> };
  before(async () => {
    server = await serverFor("sqlite", ["--job-poll-ms", "100"]);
  });
  after(async () => server?.cleanup());

  it("a dataset with outlier rows trains and training.started counts the rows cut and dropped", async () => {
    const id = await newIdentity(server.apiUrl);
    const dataset = await uploadDataset(server.apiUrl, id, DATASET);
    const job = await createJob(server.apiUrl, id, dataset.id, { lora: { r: 4, alpha: 8, maxLength: 64 } });
    const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id);
    payload(frames, "training.completed");
    const started = payload(frames, "training.started");
    assert.equal(started.trainExamples, 9);
    assert.equal(started.truncatedRows, 1);
    assert.equal(started.droppedRows, 1);
    assert.deepEqual(
      started.rowNotes.map((n: { set: string; row: number; action: string }) => [n.set, n.row, n.action]),
      [
        ["train", 10, "dropped"],
        ["train", 9, "truncated"],
      ],
    );
    assert.match(started.rowNotes[0].reason, /^the answer alone needs \d+ tokens, over maxLength 64/);
  });

  it('truncation "strict" fails the job, naming the row', async () => {
    const id = await newIdentity(server.apiUrl);
    const dataset = await uploadDataset(server.apiUrl, id, DATASET);
    const job = await createJob(server.apiUrl, id, dataset.id, {
      lora: { r: 4, alpha: 8, maxLength: 64 },
      truncation: "strict",
    });
    const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id);
    const failed = payload(frames, "training.failed");
    assert.match(
      JSON.stringify(failed),
      /trainSet row 9: \d+ tokens, over maxLength 64 \(truncation \\"strict\\"\)/,
    );
  });
});
