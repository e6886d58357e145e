// svc export as a real process against svc server: a base model as GGUF to a
// named .gguf file (the Modelfile beside it names that file), usage mistakes
// exit 2, refusals from the server (of the request, or of the model by the
// exporter) exit 1 with its message.
import assert from "node:assert/strict";
import { cp, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  cliEnv,
  createTestModel,
  runSvc,
  startTestServer,
  TEST_MODEL,
  type TestServer,
  tempDir,
} from "./harness.js";

let server: TestServer;
let home: string;
let env: NodeJS.ProcessEnv;

before(async () => {
  home = await tempDir("export-home");
  // and a model GGUF cannot carry (YaRN with beta_fast 16), from the engine's fixtures
  const yarn = join(await tempDir("yarn-model"), "model");
  const fixtures = join(
    dirname(fileURLToPath(import.meta.url)),
    "..",
    "..",
    "..",
    "..",
    "engine",
    "fixtures",
  );
  await cp(join(fixtures, "llama-yarn-v5-f16"), yarn, { recursive: true });
  server = await startTestServer({
    home,
    args: [
      "--bundled-models",
      "none",
      "--model",
      `${TEST_MODEL}=${await createTestModel()}`,
      "--model",
      `test/yarn=${yarn}`,
    ],
  });
  env = cliEnv(home, server.apiUrl);
});

after(async () => {
  await server?.stop();
});

test("svc export writes a base model as GGUF with its Modelfile, at the path asked for", async () => {
  const cwd = await tempDir("export-project");
  const out = join(cwd, "models", "tiny.gguf");
  const r = await runSvc(["export", TEST_MODEL, "--format", "gguf", "--quant", "q8_0", "--out", out], {
    cwd,
    env,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /Exporting test\/tiny-random as gguf on the server/);
  assert.match(r.stderr, /model-q8_0\.gguf +\d+\.\d MiB \/ \d+\.\d MiB/);
  assert.match(r.stdout, /Wrote 2 files/);
  const gguf = await readFile(out);
  assert.equal(gguf.subarray(0, 4).toString("ascii"), "GGUF");
  const modelfile = await readFile(join(cwd, "models", "Modelfile"), "utf8");
  assert.match(modelfile, /^FROM \.\/tiny\.gguf$/m);
  assert.match(modelfile, /TEMPLATE """/);
});

test("svc export: usage mistakes exit 2, the server's refusals exit 1 naming the field", async () => {
  const cwd = await tempDir("export-refusals");
  const noFormat = await runSvc(["export", TEST_MODEL, "--out", "x"], { cwd, env });
  assert.equal(noFormat.code, 2);
  assert.match(noFormat.stderr, /--format is required/);
  const badFormat = await runSvc(["export", TEST_MODEL, "--format", "onnx", "--out", "x"], { cwd, env });
  assert.equal(badFormat.code, 2);
  assert.match(badFormat.stderr, /--format: expected one of peft, merged, gguf, got "onnx"/);
  const checkpointOfBase = await runSvc(
    ["export", TEST_MODEL, "--checkpoint", "2", "--format", "merged", "--out", "x"],
    { cwd, env },
  );
  assert.equal(checkpointOfBase.code, 1);
  assert.match(checkpointOfBase.stderr, /--checkpoint needs a job id/);
  const peftOfBase = await runSvc(["export", TEST_MODEL, "--format", "peft", "--out", "x"], { cwd, env });
  assert.equal(peftOfBase.code, 1);
  assert.match(peftOfBase.stderr, /"format": format peft needs an adapter/);
  const badQuant = await runSvc(["export", TEST_MODEL, "--format", "gguf", "--quant", "q2_k", "--out", "x"], {
    cwd,
    env,
  });
  assert.equal(badQuant.code, 1);
  assert.match(badQuant.stderr, /"quant": quant "q2_k" is not one of f16, q8_0, q4_k_m/);
  const refused = await runSvc(["export", "test/yarn", "--format", "gguf", "--out", "x"], { cwd, env });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /cannot export to GGUF: yarn beta_fast 16 \(llama.cpp's llama uses 32\)/);
});
