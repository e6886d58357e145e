// downloadBaseModel against a loopback Hub, storing its events in a job's
// event log whose writes can fail: a failed progress write loses that one
// event, never the progress after it nor the download itself.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { createRandomModel } from "@svc/engine/testing";
import { TestHub } from "../../test/hub-server.js";
import { ModelRegistry } from "../models/model-registry.js";
import type { NewJobEvent } from "../store/job-store.js";
import { downloadBaseModel } from "./base-model-download.js";

const temp = (prefix: string) => mkdtempSync(join(tmpdir(), `svc-download-${prefix}-`));

/** A job's event log, in order; `failing(n)` says whether the n-th write (0-based) fails. */
class EventLog {
  readonly events: NewJobEvent[] = [];
  revision: string | null = null;
  private writes = 0;
  constructor(private readonly failing: (write: number, event: NewJobEvent) => boolean) {}

  async appendEvents(_jobId: string, events: NewJobEvent[]): Promise<void> {
    const write = this.writes++;
    // a database write takes a moment: later writes queue behind this one
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.failing(write, events[0])) throw new Error(`write ${write} failed: the database is busy`);
    this.events.push(...events);
  }

  async setBaseModelRevision(_jobId: string, revision: string): Promise<void> {
    this.revision = revision;
  }
}

type Progress = Extract<NewJobEvent, { type: "download.progress" }>;

describe("downloadBaseModel: the progress events of a job's base model download", () => {
  let hub: TestHub;
  let sha: string;
  const saved = { ...process.env };
  const errors: string[] = [];
  const consoleError = console.error;
  const folders: string[] = [];

  before(async () => {
    hub = await TestHub.start();
    // over 2 MB of weights, sent in 64 kB chunks 15 ms apart: the download spans several progress events
    folders.push(temp("model"));
    const modelDir = join(folders[0], "tiny");
    await createRandomModel(modelDir, { hiddenSize: 256, intermediateSize: 512, numHiddenLayers: 2 });
    sha = hub.addRepo({ repo: "test-org/tiny", dir: modelDir });
    console.error = (line: string) => errors.push(line);
  });
  after(() => {
    console.error = consoleError;
    process.env = saved;
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
    return hub.close();
  });
  beforeEach(() => {
    for (const key of ["HF_HUB_OFFLINE", "HF_TOKEN", "HF_HUB_CACHE", "HF_TOKEN_PATH"])
      delete process.env[key];
    folders.push(temp("home"));
    process.env.HF_HOME = folders.at(-1);
    process.env.HF_ENDPOINT = hub.url;
    hub.chunkDelayMs = 15;
    errors.length = 0;
  });

  const download = (log: EventLog) =>
    downloadBaseModel(
      new ModelRegistry({ bundledDir: null }),
      log,
      { id: "j_test", base_model: "test-org/tiny" },
      new AbortController().signal,
    );

  it("a failed progress write loses that event only: later progress, a full last bar and download.completed are stored", async () => {
    const log = new EventLog((write) => write === 0);
    const model = await download(log);
    assert.equal(model.info.revision, sha);
    assert.equal(log.revision, sha);
    const types = log.events.map((e) => e.type);
    assert.equal(types.at(-1), "download.completed", types.join());
    const progress = log.events.filter((e): e is Progress => e.type === "download.progress");
    assert.ok(progress.length >= 1, `progress stored after the failed write (${types.join()})`);
    const last = progress.at(-1)!;
    assert.ok(last.bytesTotal > 2_000_000 && last.bytesDone === last.bytesTotal, "the last bar is full");
    for (const [i, event] of progress.entries())
      if (i > 0) assert.ok(event.bytesDone >= progress[i - 1].bytesDone, "progress in order");
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(errors[0], /job j_test: a download\.progress event could not be stored \(write 0 failed/);
  });

  it("every progress write failing still completes the download", async () => {
    const log = new EventLog((_write, event) => event.type === "download.progress");
    await download(log);
    assert.deepEqual(
      log.events.map((e) => e.type),
      ["download.completed"],
    );
    assert.ok(errors.length >= 2, `each lost event is logged (${errors.length})`);
  });

  it("a failed download.completed write fails the download with that write's error", async () => {
    const log = new EventLog((_write, event) => event.type === "download.completed");
    await assert.rejects(download(log), /failed: the database is busy/);
    assert.ok(log.events.length >= 1 && log.events.every((e) => e.type === "download.progress"));
  });
});
