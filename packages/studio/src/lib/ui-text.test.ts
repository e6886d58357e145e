// Header identity, jobs narrowing, chart series and the run-log rendering.
import assert from "node:assert/strict";
import { test } from "node:test";
import { formatIdentity } from "./identity.js";
import { filterJobs, jobsEmptyText } from "./jobs-filter.js";
import { addLogFrame, emptySeries, extent, hasPoints, nearestStep, seriesToCsv } from "./loss-series.js";
import { jobIdFromOutput, terminalText } from "./terminal-text.js";

test("identity: mode · org [/ project] [· host]", () => {
  assert.equal(
    formatIdentity({ mode: "anonymous", orgSlug: "anon-7f3a", projectSlug: null, apiHost: null }),
    "anonymous · anon-7f3a",
  );
  assert.equal(
    formatIdentity({ mode: "oauth", orgSlug: "acme", projectSlug: "chatbot", apiHost: "api.example.com" }),
    "oauth · acme / chatbot · api.example.com",
  );
  assert.equal(
    formatIdentity({ mode: "anonymous", orgSlug: "o", projectSlug: "p", apiHost: null }),
    "anonymous · o / p",
  );
});

const jobs = [
  { id: "aaaa1111-0000-0000-0000-000000000000", name: "Support Bot v1", status: "completed" as const },
  { id: "bbbb2222-0000-0000-0000-000000000000", name: "support bot v2", status: "running" as const },
  { id: "cccc3333-0000-0000-0000-000000000000", name: "Summariser", status: "failed" as const },
];

test("jobs: case-insensitive search on name or id, one chip at a time", () => {
  assert.deepEqual(
    filterJobs(jobs, "SUPPORT", "all").map((j) => j.name),
    ["Support Bot v1", "support bot v2"],
  );
  assert.deepEqual(
    filterJobs(jobs, "cccc33", "all").map((j) => j.name),
    ["Summariser"],
  );
  assert.deepEqual(
    filterJobs(jobs, "support", "running").map((j) => j.name),
    ["support bot v2"],
  );
  assert.deepEqual(filterJobs(jobs, "", "cancelled"), []);
  // A paused job has no chip of its own (the spec's chips stay as they are): it shows under All.
  const paused = [
    ...jobs,
    { id: "dddd4444-0000-0000-0000-000000000000", name: "Paused run", status: "paused" as const },
  ];
  assert.deepEqual(
    filterJobs(paused, "paused", "all").map((j) => j.name),
    ["Paused run"],
  );
  assert.deepEqual(
    filterJobs(paused, "", "running").map((j) => j.name),
    ["support bot v2"],
  );
  assert.equal(jobsEmptyText(0, 0), "No jobs yet");
  assert.equal(jobsEmptyText(3, 0), "No matches");
  assert.equal(jobsEmptyText(3, 1), null);
});

test("chart series: one vertex per numeric loss, eval-only frames count, null frames do not", () => {
  let s = emptySeries();
  s = addLogFrame(s, { step: 1, loss: null, evalLoss: null });
  assert.equal(hasPoints(s), false);
  s = addLogFrame(s, { step: 1, loss: 2.5, evalLoss: null });
  s = addLogFrame(s, { step: 2, loss: 2.0 });
  s = addLogFrame(s, { step: 2, loss: null, evalLoss: 2.2 });
  assert.deepEqual(s.train, [
    { step: 1, value: 2.5 },
    { step: 2, value: 2.0 },
  ]);
  assert.deepEqual(s.eval, [{ step: 2, value: 2.2 }]);
  assert.deepEqual(extent(s, "value"), { min: 2.0, max: 2.5 });
  assert.deepEqual(nearestStep(s, 1.8), { step: 2, loss: 2.0, evalLoss: 2.2 });
  assert.deepEqual(nearestStep(s, 0), { step: 1, loss: 2.5, evalLoss: null });
  assert.equal(seriesToCsv(s), "step,loss,evalLoss,evalTokenAccuracy,evalExactMatch\n1,2.5,,,\n2,2,2.2,,\n");
});

test("run log: carriage returns rewrite the line, ANSI codes are dropped, job id found", () => {
  assert.equal(terminalText("train 10%\rtrain 50%\rtrain 100%\ndone"), "train 100%\ndone");
  assert.equal(terminalText("\u001b[32mok\u001b[0m"), "ok");
  assert.equal(
    jobIdFromOutput("Job 1b4e28ba-2fa1-11d2-883f-0016d3cca427 queued"),
    "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
  );
  assert.equal(jobIdFromOutput("building…"), null);
});
