// Native crashes cannot take the server down: training and generation run in
// child processes of the server. A training process killed with SIGSEGV is
// logged with its signal and the job resumes from its last checkpoint (or
// restarts from the first step when it had none) as its next attempt, while
// the API and the edge keep answering, up to --job-crash-restarts crashes in a row; an inference process killed mid-request fails that
// request with the reason and the next request starts a new process.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import {
  assertEdgeAnswers,
  type Backend,
  call,
  createJob,
  deploymentWithKey,
  eventsUntilEnd,
  newIdentity,
  openEvents,
  readSse,
  type ServerProcess,
  type SseFrame,
  serverFor,
  TINY_MODEL,
  until,
  uploadDataset,
} from "./harness.js";

// One restart after crashes in a row without a new checkpoint: the second such crash fails the job.
const FAST_POLL = ["--job-poll-ms", "100", "--job-crash-restarts", "1"];

/** The pid of the process the server's log names for this pattern's first group, once it appears. */
function pidFromLog(server: ServerProcess, pattern: RegExp): Promise<number> {
  return until(`a pid in the server log matching ${pattern}`, async () => {
    const matches = [...server.output().matchAll(new RegExp(pattern, "g"))];
    return matches.length ? Number(matches.at(-1)?.[1]) : null;
  });
}

const trainingPid = (server: ServerProcess, jobId: string, nth: number) =>
  until(`training process ${nth} of job ${jobId}`, async () => {
    const pids = [...server.output().matchAll(new RegExp(`runs job ${jobId} in process (\\d+)`, "g"))];
    return pids.length >= nth ? Number(pids[nth - 1][1]) : null;
  });

const stepsOf = (frames: SseFrame[], event: string) =>
  frames.filter((f) => f.event === event).map((f) => JSON.parse(f.data).step as number);

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`crash isolation (${backend})`, () => {
    let server: ServerProcess;
    let cleanup: () => Promise<void>;
    after(async () => cleanup?.());

    it("a training process killed by SIGSEGV is logged and resumes from its checkpoint; the API and edge keep serving", async () => {
      const started = await serverFor(backend, FAST_POLL);
      server = started;
      cleanup = started.cleanup;
      const id = await newIdentity(server.apiUrl);
      const { deployment, key } = await deploymentWithKey(
        server.apiUrl,
        id,
        `crash-${backend}-${process.pid}`,
      );
      // enough steps that the run cannot finish between its first checkpoint and the kill, even on a loaded machine
      const steps = 600;
      const job = await createJob(server.apiUrl, id, (await uploadDataset(server.apiUrl, id)).id, {
        maxSteps: steps,
        saveSteps: 5,
      });
      const stream = await openEvents(server.apiUrl, id.token, job.id);
      await readSse(stream, { stopWhen: (f) => f.event === "checkpoint.saved" });
      const pid = await trainingPid(server, job.id, 1);
      process.kill(pid, "SIGSEGV");

      // While the job restarts, the API and the edge answer.
      const health = await call(server.apiUrl, "GET", "/healthz");
      assert.equal(health.status, 200);
      await assertEdgeAnswers(server.edgeUrl, deployment.slug, key.plaintext);

      const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id, 120_000);
      const events = frames.map((f) => f.event);
      assert.equal(events.at(-2), "training.completed", events.join(","));
      assert.equal(JSON.parse(frames.at(-2)!.data).metrics.steps, steps);
      const starts = events.flatMap((e, i) => (e === "training.started" ? [i] : []));
      assert.equal(starts.length, 2, "one start per training process");
      const lastCheckpoint = stepsOf(frames.slice(0, starts[1]), "checkpoint.saved").at(-1) as number;
      assert.equal(
        stepsOf(frames.slice(starts[1]), "training.log")[0],
        lastCheckpoint + 1,
        "resumed after the checkpoint",
      );
      assert.match(
        server.output(),
        new RegExp(
          `job ${job.id}: the training process was killed by SIGSEGV \\(signal 11, segmentation fault\\)`,
        ),
      );
      assert.match(
        server.output(),
        new RegExp(`job ${job.id}: restarting training from .*checkpoint-${lastCheckpoint}`),
      );
      assert.equal(server.proc.exitCode, null, "the server is still running");

      // The resumed run says where it resumed; a reader of the history sees every step once.
      assert.equal(JSON.parse(frames[starts[1]].data).resumedFromStep, lastCheckpoint);
      const replay = await eventsUntilEnd(server.apiUrl, id.token, job.id);
      const replayed = stepsOf(replay, "training.log");
      assert.deepEqual(
        replayed,
        Array.from({ length: steps }, (_, i) => i + 1),
        `steps 1..${steps}, each once`,
      );
    });

    it("a crash before the first checkpoint restarts from the first step as attempt 2; a second crash fails the job with the signal and its attempts", async () => {
      const id = await newIdentity(server.apiUrl);
      const job = await createJob(server.apiUrl, id, (await uploadDataset(server.apiUrl, id)).id, {
        maxSteps: 100_000,
        saveSteps: 100_000,
      });
      const stream = await openEvents(server.apiUrl, id.token, job.id);
      await readSse(stream, { stopWhen: (f) => f.event === "training.log" });
      process.kill(await trainingPid(server, job.id, 1), "SIGSEGV");
      // the restart from the first step supersedes every step the first run logged
      let started = 0;
      const restart = await readSse(await openEvents(server.apiUrl, id.token, job.id), {
        stopWhen: (f) => f.event === "training.started" && ++started === 2,
      });
      const starts = restart.frames
        .filter((f) => f.event === "training.started")
        .map((f) => JSON.parse(f.data));
      assert.deepEqual(
        starts.map((s) => [s.attempt, s.resumedFromStep]),
        [
          [1, undefined],
          [2, 0],
        ],
      );
      assert.match(
        starts[1].restartedAfter,
        /^the training process was killed by SIGSEGV .* after step \d+$/,
      );
      process.kill(await trainingPid(server, job.id, 2), "SIGSEGV");
      const frames = await eventsUntilEnd(server.apiUrl, id.token, job.id, 60_000);
      const events = frames.map((f) => f.event);
      const processes = server.output().match(new RegExp(`runs job ${job.id} in process`, "g"));
      assert.equal(processes?.length, 2, "the first run and one restart from the first step");
      assert.equal(events.at(-2), "training.failed", events.join(","));
      assert.match(
        JSON.parse(frames.at(-2)!.data).error,
        /^the training process was killed by SIGSEGV \(signal 11, segmentation fault\).*; it crashed 2 times in a row without a new checkpoint \(--job-crash-restarts 1\); failed after 2 attempts$/,
      );
      assert.match(server.output(), new RegExp(`job ${job.id}: restarting training from the first step`));
      const got = await call(server.apiUrl, "GET", `/v1/jobs/${job.id}`, { token: id.token });
      assert.equal(got.body.job.status, "failed");
      assert.equal(got.body.job.attempt, 2);
    });

    it("an inference process killed mid-request fails that request with the reason; the next request starts a new one", async () => {
      const id = await newIdentity(server.apiUrl);
      const chat = (maxTokens: number) =>
        call(server.apiUrl, "POST", `/v1/inference/chat?${id.scope}`, {
          token: id.token,
          json: { baseModel: TINY_MODEL, messages: [{ role: "user", content: "hi" }], maxTokens },
        });
      assert.equal((await chat(2)).status, 200, "the inference process is up");
      const pid = await pidFromLog(server, /inference runs in process (\d+)/);
      // Stopped, the process holds the next request in flight until the signal lands.
      process.kill(pid, "SIGSTOP");
      const inFlight = chat(2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      process.kill(pid, "SIGSEGV");
      process.kill(pid, "SIGCONT");
      const failed = await inFlight;
      assert.equal(failed.status, 503, JSON.stringify(failed.body));
      assert.equal(failed.body.error.code, "inference_unavailable");
      assert.match(failed.body.error.message, /inference process was killed by SIGSEGV \(signal 11/);
      assert.match(server.output(), new RegExp(`the inference process ${pid} was killed by SIGSEGV`));

      const again = await chat(2);
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const next = await pidFromLog(server, /inference runs in process (\d+)/);
      assert.notEqual(next, pid);
      assert.equal((await call(server.apiUrl, "GET", "/healthz")).status, 200);
    });
  });
}
