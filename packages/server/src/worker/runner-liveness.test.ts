import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { runnerName, runnerProcessGone } from "./runner-liveness.js";

test("a runner's name carries its pid; this process's own runners are alive", () => {
  const name = runnerName();
  assert.match(name, new RegExp(`^worker-${process.pid}-[A-Za-z0-9]{8}$`));
  assert.notEqual(runnerName(), name);
  assert.equal(runnerProcessGone(name), false);
});

test("a runner whose process exited is gone; a live process's is not", async () => {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  const pid = child.pid!;
  assert.equal(runnerProcessGone(`worker-${pid}-abcdefgh`), false, "alive while it runs");
  await once(child, "exit");
  assert.equal(runnerProcessGone(`worker-${pid}-abcdefgh`), true);
  assert.equal(runnerProcessGone(`worker-${process.ppid}-abcdefgh`), false);
});

test("an earlier process with this process's pid (a restarted container) is gone; a name without a pid is left to the lease", () => {
  assert.equal(runnerProcessGone(`worker-${process.pid}-zzzzzzzz`), true);
  assert.equal(runnerProcessGone("worker-AbCdEf0123"), false, "the name runners had before it carried a pid");
  assert.equal(runnerProcessGone("someone-else"), false);
});
