import assert from "node:assert/strict";
import { test } from "node:test";
import {
  checkpointModelId,
  datasetIdOf,
  eventSeqOf,
  fileId,
  fineTunedModelId,
  jobIdOf,
  parseFineTunedModel,
  resultFileId,
  resultJobIdOf,
} from "./openai-ids.js";

const JOB = "0192f2a4-7b1c-7d3e-8f00-0123456789ab";

test("file ids map to dataset ids and result files to their job, and nothing else parses", () => {
  assert.equal(datasetIdOf(fileId(JOB)), JOB);
  assert.equal(resultJobIdOf(resultFileId(JOB)), JOB);
  assert.equal(datasetIdOf(resultFileId(JOB)), null);
  assert.equal(resultJobIdOf(fileId(JOB)), null);
  assert.equal(datasetIdOf("file-abc"), null);
  assert.equal(datasetIdOf(JOB), null);
});

test("job ids: ftjob-<uuid> or the bare svc job id", () => {
  assert.equal(jobIdOf(`ftjob-${JOB}`), JOB);
  assert.equal(jobIdOf(JOB), JOB);
  assert.equal(jobIdOf("ftjob-abc"), null);
  assert.equal(eventSeqOf(JOB, `ftevent-${JOB}-12`), 12);
  assert.equal(eventSeqOf(JOB, `ftevent-${JOB}-012`), null);
  assert.equal(eventSeqOf(JOB, "ftevent-other-12"), null);
  assert.equal(eventSeqOf(JOB, `ftevent-${JOB}-2147483648`), null);
});

test("ft: model ids round-trip, with and without a suffix and a checkpoint", () => {
  const name = { baseModel: "svc/pico-llama", orgSlug: "acme", suffix: "support", jobId: JOB };
  assert.equal(fineTunedModelId(name), `ft:svc/pico-llama:acme:support:${JOB}`);
  assert.deepEqual(parseFineTunedModel(fineTunedModelId(name)), {
    prefix: "ft:svc/pico-llama:acme:support",
    jobId: JOB,
    step: null,
  });
  assert.deepEqual(parseFineTunedModel(checkpointModelId({ ...name, suffix: "" }, 8)), {
    prefix: "ft:svc/pico-llama:acme:",
    jobId: JOB,
    step: 8,
  });
  assert.equal(parseFineTunedModel("svc/pico-llama"), null);
  assert.equal(parseFineTunedModel(`ft:x:${JOB}:ckpt-step-0`), null);
  assert.equal(parseFineTunedModel(`ft:x:${JOB}:ckpt-step-2147483648`), null);
});
