import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { writeTestTokenizer } from "../testing/test-tokenizer.js";
import { loadTokenizer } from "../text/tokenizer.js";
import type { Tokenizer } from "../types.js";
import { IncrementalDetokenizer, StopStringFilter } from "./stop-strings.js";

let dir: string;
let bytesTokenizer: Tokenizer; // one token per byte
let bpeTokenizer: Tokenizer; // with merges

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-stop-"));
  await writeTestTokenizer(join(dir, "bytes"));
  await writeTestTokenizer(join(dir, "bpe"), { merges: 200 });
  bytesTokenizer = await loadTokenizer(join(dir, "bytes"));
  bpeTokenizer = await loadTokenizer(join(dir, "bpe"));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const MULTIBYTE = "Grüße, naïve café — 日本語のテキスト 🙂🚀 done.";

test("detokenizer: multi-byte characters split over byte tokens are never emitted in halves", () => {
  for (const tokenizer of [bytesTokenizer, bpeTokenizer]) {
    const ids = tokenizer.encode(MULTIBYTE);
    const detok = new IncrementalDetokenizer(tokenizer);
    const pieces = ids.map((id) => detok.push(id));
    pieces.push(detok.flush());
    for (const piece of pieces) assert.ok(!piece.includes("\uFFFD"), `piece ${JSON.stringify(piece)}`);
    assert.equal(pieces.join(""), MULTIBYTE);
    // 🙂 is 4 bytes: with byte tokens, three of them emit nothing.
    if (tokenizer === bytesTokenizer) assert.ok(pieces.filter((p) => p === "").length >= 3);
  }
});

test("detokenizer: an incomplete character left at the end is flushed as U+FFFD", () => {
  const ids = bytesTokenizer.encode("ab🙂");
  const detok = new IncrementalDetokenizer(bytesTokenizer);
  const text = ids
    .slice(0, -1)
    .map((id) => detok.push(id))
    .join("");
  assert.equal(text, "ab");
  assert.equal(detok.flush(), "\uFFFD");
});

test("detokenizer: spaces between tokens survive windowed decoding", () => {
  const text = "the answer is yes, the answer is no, thank you";
  const ids = bpeTokenizer.encode(text);
  assert.ok(ids.length < text.length, "the BPE tokenizer merged something");
  const detok = new IncrementalDetokenizer(bpeTokenizer);
  assert.equal(ids.map((id) => detok.push(id)).join("") + detok.flush(), text);
});

/** Feeds pieces through a filter; returns the emitted text and whether it stopped. */
function run(stops: string[], pieces: string[]): { text: string; stopped: boolean; emitted: string[] } {
  const filter = new StopStringFilter(stops);
  const emitted: string[] = [];
  for (const piece of pieces) {
    const out = filter.push(piece);
    emitted.push(out.text);
    if (out.stopped) return { text: emitted.join(""), stopped: true, emitted };
  }
  emitted.push(filter.flush());
  return { text: emitted.join(""), stopped: false, emitted };
}

test("stop strings: a stop string spanning pieces ends the text before it", () => {
  const r = run(["END"], ["Hello E", "N", "D and more"]);
  assert.deepEqual(r.emitted, ["Hello ", "", ""]);
  assert.equal(r.text, "Hello ");
  assert.equal(r.stopped, true);
});

test("stop strings: held text is released once it can no longer be a stop string", () => {
  const r = run(["END"], ["Hello E", "NTER"]);
  assert.deepEqual(r.emitted, ["Hello ", "ENTER", ""]);
  assert.equal(r.stopped, false);
});

test("stop strings: the earliest of several stop strings wins; none is emitted", () => {
  assert.equal(run(["\n\n", "User:"], ["a\nUser", ":x\n\n"]).text, "a\n");
  assert.equal(run(["bc", "abcd"], ["xab", "cd"]).text, "x"); // "abcd" starts first
});

test("stop strings: a pending prefix at the end of the stream is flushed", () => {
  const r = run(["\n\n"], ["line\n"]);
  assert.deepEqual(r.emitted, ["line", "\n"]);
  assert.equal(r.stopped, false);
});

test("stop strings: without stop strings text passes straight through", () => {
  assert.deepEqual(run([], ["a", "b"]).emitted, ["a", "b", ""]);
});
