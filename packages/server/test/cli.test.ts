// `svc server` as a process: a busy port is one clear line and exit code 2;
// unknown flags are usage errors.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { it } from "node:test";
import { MAIN_JS, tempDir } from "./harness.js";

it("refuses a busy port with one clear line and exit code 2", async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
  const port = (blocker.address() as { port: number }).port;
  try {
    const result = spawnSync(
      process.execPath,
      [
        MAIN_JS,
        "server",
        "--port",
        String(port),
        "--edge-port",
        "0",
        "--data-dir",
        tempDir("busy"),
        "--bundled-models",
        "none",
      ],
      {
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    assert.equal(result.status, 2);
    const lines = result.stderr.trim().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    assert.match(lines[0], new RegExp(`port ${port} on 127.0.0.1 is already in use`));
  } finally {
    blocker.close();
  }
});

it("treats unknown flags and bad values as usage errors (exit 2)", () => {
  for (const args of [
    ["--prot", "1"],
    ["--port", "abc"],
    ["--model", "no-equals-sign"],
    ["--oidc-issuer", "http://x"],
    ["--upstream", "no-url"],
    ["--upstream", "Bad_Name=http://127.0.0.1:8000/v1"],
    ["--upstream", "vllm=ftp://127.0.0.1/v1"],
    ["--upstream", "vllm=http://a/v1", "--upstream", "vllm=http://b/v1"],
    ["--max-job-steps", "0"],
    ["--max-job-steps", "2147483648"],
    ["--max-batch-size", "1e9x"],
    ["--dataset-url-allow", "host:99999"],
    ["--dataset-url-allow", "a/b"],
  ]) {
    const result = spawnSync(process.execPath, [MAIN_JS, "server", ...args, "--data-dir", tempDir("usage")], {
      encoding: "utf8",
      timeout: 30_000,
    });
    assert.equal(result.status, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, /usage: svc server/);
  }
});
