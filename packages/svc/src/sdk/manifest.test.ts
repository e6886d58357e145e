import assert from "node:assert/strict";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { buildBundle, loadManifest } from "./manifest.js";

async function project(source: string | null) {
  const dir = await mkdtemp(join(tmpdir(), "svc-manifest-"));
  if (source !== null) {
    await mkdir(join(dir, "src", "svc"), { recursive: true });
    await writeFile(join(dir, "src", "svc", "index.ts"), source);
  }
  return dir;
}

const TRAINER = `import { createSvc, createTrainer } from "svc";
const trainer = createTrainer({ name: "triage", model: "svc/pico-llama", dataset: { type: "file", path: "d.jsonl" } });
export default createSvc({ trainer });
`;

test("the manifest names the trainer; svc resolves to this SDK without node_modules", async () => {
  const dir = await project(TRAINER);
  assert.deepEqual(await loadManifest(dir), { trainer: { name: "triage", model: "svc/pico-llama" } });
});

test("a named `svc` export works, and an empty module has no trainer", async () => {
  assert.equal(
    (await loadManifest(await project(TRAINER.replace("export default", "export const svc =")))).trainer
      ?.name,
    "triage",
  );
  assert.deepEqual(await loadManifest(await project("export const x = 1;\n")), { trainer: null });
});

test("build errors are file:line:col message", async () => {
  const dir = await project("const a = 1;\nconst b = ;\n");
  const r = await buildBundle(dir);
  assert.equal(r.ok, false);
  assert.deepEqual(!r.ok && r.errors, ['src/svc/index.ts:2:11 Unexpected ";"']);
  await assert.rejects(loadManifest(dir), /src\/svc\/index\.ts:2:11 Unexpected ";"/);
});

test("a missing entry is a build error; rebuild picks up edits", async () => {
  const missing = await buildBundle(await project(null));
  assert.equal(missing.ok, false);
  const dir = await project(TRAINER);
  assert.equal((await loadManifest(dir)).trainer?.name, "triage");
  await writeFile(join(dir, "src", "svc", "index.ts"), TRAINER.replace('"triage"', '"renamed"'));
  assert.equal((await loadManifest(dir)).trainer?.name, "triage", "the existing bundle is reused");
  assert.equal((await loadManifest(dir, { rebuild: true })).trainer?.name, "renamed");
});

test("an invalid trainer fails loading with the SDK's message", async () => {
  const dir = await project(TRAINER.replace("svc/pico-llama", "no-org-model"));
  await assert.rejects(loadManifest(dir), /unsupported base model "no-org-model"/);
});
