import assert from "node:assert/strict";
import { test } from "node:test";
import { readServerSentEvents, ServerSentEventParser } from "./server-sent-events.js";

test("parser handles ids, names, multi-line data, comments and CRLF split across chunks", () => {
  const p = new ServerSentEventParser();
  const frames = [
    ...p.push("id: 1\r"),
    ...p.push('\nevent: training.log\r\ndata: {"a":'),
    ...p.push("1}\r\n\r\n: ping\n\nevent: x\ndata: line1\ndata: line2\n"),
    ...p.push("\ndata:nospace\n\n"),
  ];
  assert.deepEqual(frames, [
    { event: "training.log", data: '{"a":1}', id: "1" },
    { event: "x", data: "line1\nline2", id: undefined },
    { event: "message", data: "nospace", id: undefined },
  ]);
});

test("readServerSentEvents reports activity for comment-only chunks", async () => {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(enc.encode(": ping\n\n"));
      c.enqueue(enc.encode("event: end\ndata: {}\n\n"));
      c.close();
    },
  });
  let activity = 0;
  const got = [];
  for await (const f of readServerSentEvents(body, { onActivity: () => activity++ })) got.push(f.event);
  assert.deepEqual(got, ["end"]);
  assert.equal(activity, 2);
});
