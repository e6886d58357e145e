import assert from "node:assert/strict";
import { test } from "node:test";
import { MISSING_PIECES, missingPieceOf, needs } from "./missing-piece.js";

test("a skip reason made by needs() gives back its piece and detail; any other reason gives null", () => {
  for (const piece of MISSING_PIECES) {
    assert.deepEqual(missingPieceOf(needs(piece, "x: y")), { piece, detail: "x: y" });
  }
  assert.equal(needs("torch ≥ 2.7", "python3 has torch 1.13"), "needs torch ≥ 2.7: python3 has torch 1.13");
  // "torch" is a prefix of "torch 1.x": the longer piece is still found whole
  assert.deepEqual(missingPieceOf(needs("torch 1.x", "d")), { piece: "torch 1.x", detail: "d" });
  assert.equal(missingPieceOf("no `script`"), null);
  assert.equal(missingPieceOf("needs unicorns: none here"), null);
});
