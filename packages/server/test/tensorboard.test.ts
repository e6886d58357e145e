// TensorBoard event files through `svc server` (docs/tensorboard.md): a job
// that trains lists a "tensorboard" artifact in training.completed; the file
// downloaded through the artifacts API reads back (both CRCs of every record,
// the Event fields) with every training.log number at its step, and after a
// crash mid-run each step appears once. Where a Python has tensorboard
// (SVC_TENSORBOARD_PYTHON, default python3), TensorBoard's own
// EventAccumulator reads the downloaded file too; elsewhere that test is skipped.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { needs } from "@svc/engine/testing";
import {
  call,
  chatJsonl,
  createJob,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  openEvents,
  readSse,
  type ServerProcess,
  type SseFrame,
  serverFor,
  tempDir,
  until,
  uploadDataset,
} from "./harness.js";
import { type ReadEvent, readEventFile, scalarSeries } from "./tfevents-reader.js";

/** training.log field → tag, as docs/tensorboard.md lists them. */
const TAGS: Record<string, string> = {
  loss: "train/loss",
  learningRate: "train/learning_rate",
  tokensPerSecond: "train/tokens_per_second",
  epoch: "train/epoch",
  evalLoss: "eval/loss",
  evalTokenAccuracy: "eval/token_accuracy",
  evalExactMatch: "eval/exact_match",
};

/** tag → [step, value as a 32-bit float][] that the job's training.log frames call for. */
function expectedSeries(frames: SseFrame[]): Map<string, [number, number][]> {
  const series = new Map<string, [number, number][]>();
  for (const f of frames.filter((f) => f.event === "training.log")) {
    const p = JSON.parse(f.data) as Record<string, unknown>;
    for (const [field, tag] of Object.entries(TAGS)) {
      const value = p[field];
      if (typeof value !== "number") continue;
      series.set(tag, [...(series.get(tag) ?? []), [p.step as number, Math.fround(value)]]);
    }
  }
  return series;
}

/** The job's event file through the artifacts API; `settled`: the listing's size must be the file's. */
async function download(
  apiUrl: string,
  id: Identity,
  jobId: string,
  settled = true,
): Promise<{ name: string; bytes: Buffer }> {
  const meta = await call(apiUrl, "GET", `/v1/jobs/${jobId}/artifacts/tensorboard`, { token: id.token });
  assert.equal(meta.status, 200, JSON.stringify(meta.body));
  assert.equal(meta.body.artifact.kind, "tensorboard");
  const [file] = meta.body.artifact.files as { path: string; bytes: number }[];
  assert.match(file.path, /^events\.out\.tfevents\.\d+\.[A-Za-z0-9._-]+$/);
  const res = await fetch(`${apiUrl}/v1/jobs/${jobId}/artifacts/tensorboard/${file.path}`, {
    headers: { authorization: `Bearer ${id.token}` },
  });
  assert.equal(res.status, 200);
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.equal(res.headers.get("content-length"), String(bytes.length));
  if (settled)
    assert.equal(bytes.length, file.bytes, "the listing's size is the file's once the job settled");
  return { name: file.path, bytes };
}

const tensorboardPython = process.env.SVC_TENSORBOARD_PYTHON ?? "python3";
const noTensorboard = (() => {
  const probe = spawnSync(tensorboardPython, ["-c", "import tensorboard; print(tensorboard.__version__)"], {
    encoding: "utf8",
  });
  return probe.status === 0 ? false : needs("tensorboard", `${tensorboardPython} has no tensorboard package`);
})();

const ACCUMULATOR_SCRIPT = `
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1])
acc.Reload()
print(json.dumps({t: [[e.step, e.value] for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}))
`;

describe("TensorBoard event files through svc server (sqlite)", () => {
  let server: ServerProcess & { cleanup(): Promise<void> };
  let downloaded: { name: string; bytes: Buffer; series: Map<string, [number, number][]> } | null = null;
  before(async () => {
    server = await serverFor("sqlite", ["--job-poll-ms", "100"]);
  });
  after(async () => server?.cleanup());

  it("a trained job's event file is an artifact; downloaded, it holds every training.log number at its step", async () => {
    const id = await newIdentity(server.apiUrl);
    const dataset = await uploadDataset(server.apiUrl, id);
    const evalSet = await uploadDataset(server.apiUrl, id, chatJsonl(4), "eval.jsonl");
    const job = await createJob(
      server.apiUrl,
      id,
      dataset.id,
      { maxSteps: 6, saveSteps: 3, evalSteps: 2 },
      { evalDatasetId: evalSet.id },
    );
    const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id);
    const completed = JSON.parse(frames.find((f) => f.event === "training.completed")!.data);
    assert.deepEqual(
      completed.artifacts.map((a: { name: string }) => a.name),
      ["checkpoint-3", "checkpoint-6", "final", "tensorboard"],
    );
    const listed = completed.artifacts.at(-1);
    assert.equal(listed.kind, "tensorboard");
    assert.equal(listed.step, 6);

    const { name, bytes } = await download(server.apiUrl, id, job.id);
    const events = readEventFile(bytes);
    assert.equal(events[0].fileVersion, "brain.Event:2");
    assert.equal(events[0].step, 0);
    const created = Number(name.split(".")[3]);
    for (const e of events) assert.ok(Math.abs(e.wallTime - created) < 600, `wall time ${e.wallTime}`);
    const series = scalarSeries(events);
    const expected = expectedSeries(frames);
    assert.deepEqual(series, expected);
    for (const tag of ["train/loss", "train/learning_rate", "train/tokens_per_second", "train/epoch"])
      assert.deepEqual(
        series.get(tag)?.map(([step]) => step),
        [1, 2, 3, 4, 5, 6],
        tag,
      );
    assert.deepEqual(
      series.get("eval/loss")?.map(([step]) => step),
      [2, 4, 6],
    );
    downloaded = { name, bytes, series };
  });

  it("after a training process is killed past its checkpoint, the file holds each step once", async () => {
    const id = await newIdentity(server.apiUrl);
    const job = await createJob(server.apiUrl, id, (await uploadDataset(server.apiUrl, id)).id, {
      maxSteps: 80,
      saveSteps: 5,
    });
    const pid = await until(`the training process of job ${job.id}`, async () => {
      const m = new RegExp(`runs job ${job.id} in process (\\d+)`).exec(server.output());
      return m ? Number(m[1]) : null;
    });
    await readSse(await openEvents(server.apiUrl, id.token, job.id), {
      stopWhen: (f) => f.event === "checkpoint.saved",
    });
    // Stop the process where it has logged steps past its last checkpoint, then kill it there.
    let superseded = 0;
    for (let attempt = 0; attempt < 50 && superseded === 0; attempt++) {
      process.kill(pid, "SIGSTOP");
      await new Promise((r) => setTimeout(r, 300));
      const { frames } = await readSse(await openEvents(server.apiUrl, id.token, job.id), { timeoutMs: 500 });
      const last = (event: string) =>
        Math.max(0, ...frames.filter((f) => f.event === event).map((f) => JSON.parse(f.data).step as number));
      superseded = last("training.log") - last("checkpoint.saved");
      if (superseded > 0) {
        // Mid-run, a download holds every step logged so far (past the listing's last update).
        const midRun = readEventFile((await download(server.apiUrl, id, job.id, false)).bytes);
        assert.equal(midRun.at(-1)?.step, last("training.log"));
        process.kill(pid, "SIGKILL");
      } else {
        process.kill(pid, "SIGCONT");
        await new Promise((r) => setTimeout(r, 15));
      }
    }
    assert.ok(superseded > 0, "the process was stopped past a checkpoint");

    const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id, 120_000);
    assert.equal(frames.at(-2)?.event, "training.completed", frames.map((f) => f.event).join(","));

    const events = readEventFile((await download(server.apiUrl, id, job.id)).bytes);
    const steps = events.slice(1).map((e: ReadEvent) => e.step);
    assert.deepEqual(
      steps,
      Array.from({ length: 80 }, (_, i) => i + 1),
      "steps 1..80, each once",
    );
    // The history replayed now leaves out the superseded frames: the file matches it.
    const replay = await eventsUntilEnd(server.apiUrl, id.token, job.id);
    assert.deepEqual(scalarSeries(events), expectedSeries(replay));
  });

  it("TensorBoard's own EventAccumulator reads the downloaded file", { skip: noTensorboard }, () => {
    assert.ok(downloaded, "the first test downloaded a file");
    const root = tempDir("tensorboard");
    const logdir = join(root, "run");
    mkdirSync(logdir, { recursive: true });
    writeFileSync(join(logdir, downloaded.name), downloaded.bytes);
    const run = spawnSync(tensorboardPython, ["-c", ACCUMULATOR_SCRIPT, logdir], { encoding: "utf8" });
    rmSync(root, { recursive: true, force: true });
    assert.equal(run.status, 0, run.stderr);
    const read = JSON.parse(run.stdout) as Record<string, [number, number][]>;
    assert.deepEqual(new Map(Object.entries(read).sort()), new Map([...downloaded.series].sort()));
  });
});
