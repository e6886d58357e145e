import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createRandomModel } from "@svc/engine/testing";
import { DataDir } from "../data-dir.js";
import { ApiError } from "../http/api-error.js";
import { ExportRunner, MAX_PENDING_EXPORTS } from "./export-runner.js";

test("a process holds a bounded number of exports: past it, 429 and nothing recorded; each then finishes in turn", async () => {
  const root = mkdtempSync(join(tmpdir(), "svc-export-runner-"));
  try {
    const model = join(root, "model");
    await createRandomModel(model, { hiddenSize: 16, intermediateSize: 32, numHiddenLayers: 1 });
    const runner = new ExportRunner(new DataDir(join(root, "data")));
    const request = {
      projectId: "p",
      format: "gguf" as const,
      quant: "f16",
      jobId: null,
      step: null,
      baseModel: "test/tiny",
      modelDir: model,
      adapterDir: null,
    };
    const started = Array.from({ length: MAX_PENDING_EXPORTS }, () => runner.start(request));
    assert.throws(
      () => runner.start(request),
      (e) => e instanceof ApiError && e.status === 429 && /already running or queued/.test(e.message),
    );
    const finished = async (id: string) => {
      for (;;) {
        const info = runner.get(id);
        assert.ok(info);
        if (info.status !== "running") return info;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    for (const { id } of started) assert.equal((await finished(id)).status, "ready");
    const again = runner.start(request);
    assert.equal(again.status, "running", "a slot is free again");
    assert.deepEqual(
      (await finished(again.id)).files.map((f) => f.path),
      ["model-f16.gguf", "Modelfile"],
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
