import assert from "node:assert/strict";
import { test } from "node:test";
import type { StoredJobEvent } from "../store/job-store.js";
import { EventPageCache, encodePage, sliceAfter } from "./event-pages.js";
import { ResumeMarkers } from "./superseded-steps.js";

const event = (
  seq: number,
  type: StoredJobEvent["type"],
  fields: Record<string, unknown> = {},
): StoredJobEvent => ({
  seq,
  type,
  data: JSON.stringify({ type, ...fields }),
});
const log = (seq: number, step: number) => event(seq, "training.log", { step, loss: 1 });
const decoder = new TextDecoder();
/** The ids of the frames in `bytes`. */
const ids = (bytes: Uint8Array) =>
  [...decoder.decode(bytes).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

test("a page's frames are SSE frames back to back; a slice starts after the subscriber's last id", () => {
  const page = encodePage([event(1, "training.started"), log(2, 1), log(3, 2)]);
  assert.equal(
    decoder.decode(page.bytes),
    'id: 1\nevent: training.started\ndata: {"type":"training.started"}\n\n' +
      'id: 2\nevent: training.log\ndata: {"type":"training.log","step":1,"loss":1}\n\n' +
      'id: 3\nevent: training.log\ndata: {"type":"training.log","step":2,"loss":1}\n\n',
  );
  const slice = sliceAfter(page, 1, null);
  assert.deepEqual(ids(slice.bytes), [2, 3]);
  assert.equal(slice.through, 3);
  assert.equal(slice.ended, false);
  // Without anything to leave out, a slice is a view of the shared bytes, not a copy.
  assert.equal(slice.bytes.buffer, page.bytes.buffer);
  const none = sliceAfter(page, 3, null);
  assert.equal(none.bytes.length, 0);
  assert.equal(none.through, 3);
});

test("a slice stops at `end` and says so", () => {
  const page = encodePage([log(7, 6), event(8, "training.completed"), event(9, "end")]);
  const slice = sliceAfter(page, 6, null);
  assert.deepEqual(ids(slice.bytes), [7, 8, 9]);
  assert.deepEqual([slice.through, slice.ended], [9, true]);
});

test("a slice leaves out the steps a later resume superseded, and moves past them", () => {
  // Run 1 logged steps 1..4 (seq 2..5), resumed from its checkpoint at step 2 (seq 6), logged 3..4 again.
  const events = [event(1, "training.started"), log(2, 1), log(3, 2), log(4, 3), log(5, 4)];
  const markers = new ResumeMarkers([{ seq: 6, step: 2 }]);
  const first = sliceAfter(encodePage(events), 0, markers);
  assert.deepEqual(ids(first.bytes), [1, 2, 3]);
  assert.equal(first.through, 5, "the superseded frames count as passed");
  const resumed = encodePage([event(6, "training.started", { resumedFromStep: 2 }), log(7, 3), log(8, 4)]);
  assert.deepEqual(ids(sliceAfter(resumed, 5, markers).bytes), [6, 7, 8]);
});

test("resume markers: the lowest resume step after an event decides", () => {
  const markers = new ResumeMarkers([
    { seq: 50, step: 3 },
    { seq: 20, step: 10 },
  ]);
  assert.equal(markers.resumeStepAfter(10), 3);
  assert.equal(markers.resumeStepAfter(20), 3);
  assert.equal(markers.resumeStepAfter(50), Number.POSITIVE_INFINITY);
  assert.equal(markers.supersedes(10, 4), true);
  assert.equal(markers.supersedes(10, 3), false);
  assert.equal(markers.supersedes(30, 9), true);
  assert.equal(markers.supersedes(60, 9), false);
  assert.equal(markers.supersedes(10, null), false);
});

test("the cache keeps full pages, shares reads in flight and re-reads a short page", async () => {
  const log1 = Array.from({ length: 10 }, (_, i) => log(i + 1, i + 1));
  const reads: string[] = [];
  const cache = new EventPageCache(async (jobId, after, limit) => {
    reads.push(`${jobId}:${after}:${limit}`);
    return log1.filter((e) => e.seq > after).slice(0, limit);
  }, 1 << 20);
  const [a, b] = await Promise.all([cache.page("j", 0, 4), cache.page("j", 0, 4)]);
  assert.equal(a, b);
  await cache.page("j", 0, 4);
  assert.deepEqual(reads, ["j:0:4"], "one read for three requests of a full page");
  await cache.page("j", 8, 4);
  await cache.page("j", 8, 4);
  assert.deepEqual(reads, ["j:0:4", "j:8:4", "j:8:4"], "the log's end is read each time");
});

test("the cache stays within its byte budget, dropping the least recently used page", async () => {
  const read = async (_jobId: string, after: number, limit: number) =>
    Array.from({ length: limit }, (_, i) => log(after + i + 1, after + i + 1));
  const one = encodePage(await read("j", 0, 4));
  const budget = one.bytes.length * 2 + 4 * 24 * 2 + 10;
  const reads: number[] = [];
  const cache = new EventPageCache(async (jobId, after, limit) => {
    reads.push(after);
    return read(jobId, after, limit);
  }, budget);
  await cache.page("j", 0, 4);
  await cache.page("j", 4, 4);
  await cache.page("j", 0, 4); // 0 is now the most recently used
  await cache.page("j", 8, 4); // evicts 4
  await cache.page("j", 0, 4);
  await cache.page("j", 4, 4);
  assert.deepEqual(reads, [0, 4, 8, 4]);
});
