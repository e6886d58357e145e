import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ModelGraph } from "../graph/model.js";
import { loadModel } from "../loading/load.js";
import { FAMILY_CONFIGS } from "./family-configs.js";
import { writeModelFolder } from "./model-folder.js";

test("a folder of every family reloads with the logits of the weights it was written from", async () => {
  const root = mkdtempSync(join(tmpdir(), "svc-model-folder-"));
  try {
    for (const [family, raw] of Object.entries(FAMILY_CONFIGS)) {
      const dir = join(root, family);
      const { config, weights } = await writeModelFolder(dir, { ...raw, vocab_size: 300 }, { seed: 3 });
      const ids = [1, 50, 299, 7, 120];
      const want = new ModelGraph(config, weights, { inferenceOnly: true }).logits(ids, null);
      const got = (await loadModel(dir)).logits(ids);
      let diff = 0;
      for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(want[i] - got[i]));
      // Gemma's norms go through w - 1 and back in float32
      assert.ok(diff < 1e-5, `${family}: ${diff}`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
