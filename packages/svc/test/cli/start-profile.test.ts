// svc start prints the training dataset's profile for the trainer's model
// between the submitted line and the job's progress (docs/cli.md). The test
// model's tokenizer has one token per byte and ChatML: a row with a user
// content of N bytes and an answer of M is 20 + N prompt and M + 1 answer tokens.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cliEnv, runSvc, startTestModelServer, type TestServer, tempDir } from "./harness.js";
import { PROFILE_ROWS, PROFILE_TRAINER } from "./profile-fixture.js";

let server: TestServer;
let env: NodeJS.ProcessEnv;

before(async () => {
  const home = await tempDir("profile-home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

test("svc start prints the dataset profile: rows, duplicates, token lengths, maxLength and the suggestion", async () => {
  const dir = await tempDir("profile-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await mkdir(join(dir, "data"), { recursive: true });
  await writeFile(join(dir, "src", "svc", "index.ts"), PROFILE_TRAINER);
  await writeFile(join(dir, "data", "train.jsonl"), `${PROFILE_ROWS}\n`);
  const r = await runSvc(["start"], { cwd: dir, env, timeoutMs: 300_000 });
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}\n${server.log()}`);
  const lines = r.stdout.split("\n");
  const at = lines.findIndex((l) => /^job \S+ submitted: profiled on test\/tiny-random$/.test(l));
  assert.ok(at >= 0, r.stdout);
  assert.deepEqual(lines.slice(at + 1, at + 5), [
    "dataset profile (test/tiny-random): 6 rows, 2 exact duplicates (row 2 repeats row 1, row 3 repeats row 1)",
    "  tokens per row: prompt p50 22 / p95 120 / max 120, answer p50 2 / p95 201 / max 201, total p50 24 / p95 226 / max 226",
    "  messages: 6 user, 6 assistant; 6 rows with 1 assistant turn",
    "  maxLength 64: 2 rows over it (cut on the prompt side, dropped if the answer cannot fit); " +
      "suggested maxLength 256 (holds 95% of rows in full and every answer)",
  ]);
  // The job's report agrees: rows 5 and 6 are the two over 64, and their answers with
  // the least prompt (51 + 20, 201 + 20 tokens) cannot fit, so both are dropped.
  assert.match(
    lines[at + 5],
    /^started: 2 steps, 4 train \/ 0 eval examples, .*0 rows truncated, 2 rows dropped \(train row 5, train row 6\)$/,
  );
});
