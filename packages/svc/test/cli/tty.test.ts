// On a terminal (a pseudo-terminal from util-linux `script`): svc init asks for
// the template and directory, and svc start draws one progress bar line.
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { needs } from "@svc/engine/testing";
import {
  cliEnv,
  HAS_SCRIPT,
  ptyArgs,
  runProcess,
  SVC_BIN,
  startTestModelServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "./harness.js";

let server: TestServer;
let env: NodeJS.ProcessEnv;

before(async () => {
  if (!HAS_SCRIPT) return;
  const home = await tempDir("tty-home");
  server = await startTestModelServer(home);
  env = cliEnv(home, server.apiUrl, { COLUMNS: "120" });
});

after(async () => {
  await server?.stop();
});

function onTerminal(args: string[], cwd: string, input?: string) {
  const command = [process.execPath, SVC_BIN, ...args].map((a) => `'${a}'`).join(" ");
  return runProcess("script", ptyArgs(command), { cwd, env, input, timeoutMs: 120_000 });
}

test("svc init on a terminal asks for the template and the directory", {
  skip: !HAS_SCRIPT && needs("the script command", "no `script` (util-linux) on the PATH"),
}, async () => {
  const work = await tempDir("tty-init");
  const r = await onTerminal(["init"], work, "pii-redaction\n./mine\n");
  assert.equal(r.code, 0, r.stdout);
  assert.match(r.stdout, /Template\? \(ticket-triage\) /);
  assert.match(r.stdout, /Directory\? \(\.\/pii-redaction\) /);
  assert.match(r.stdout, /Created mine from the pii-redaction template\./);
  assert.match(await readFile(join(work, "mine", "src", "svc", "index.ts"), "utf8"), /name: "pii-redaction"/);
});

test("svc start on a terminal redraws one progress bar", {
  skip: !HAS_SCRIPT && needs("the script command", "no `script` (util-linux) on the PATH"),
}, async () => {
  const dir = await tempDir("tty-project");
  await mkdir(join(dir, "src", "svc"), { recursive: true });
  await writeFile(
    join(dir, "src", "svc", "index.ts"),
    `import { createSvc, createTrainer } from "svc";
const rows = Array.from({ length: 8 }, (_, i) => ({ messages: [{ role: "user", content: "q" + i }, { role: "assistant", content: "a" + i }] }));
export default createSvc({ trainer: createTrainer({ name: "tty", model: "${TEST_MODEL}" as "svc/pico-llama", dataset: { type: "inline", rows }, evalDataset: { type: "inline", rows }, maxSteps: 4, evalSteps: 2, batchSize: 2 }) });
`,
  );
  const r = await onTerminal(["start"], dir);
  assert.equal(r.code, 0, r.stdout);
  const redraws = r.stdout.split("\r\x1b[2K").slice(1);
  assert.ok(redraws.length >= 4, `one redraw per log event:\n${JSON.stringify(r.stdout)}`);
  assert.match(r.stdout, /\[#+\] 4\/4 100% {2}loss=\d+\.\d{4} {2}evalLoss=\d+\.\d{4}/);
  assert.doesNotMatch(r.stdout, /^step \d+\/4/m, "no plain step lines on a terminal");
  assert.match(r.stdout, /completed: \d+ artifacts?, 4 steps/);
  assert.match(r.stdout, /done: job \S+ \(adapter: final\)/);
});
