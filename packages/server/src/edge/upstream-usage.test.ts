import assert from "node:assert/strict";
import { it } from "node:test";
import { UpstreamUsageReader } from "./upstream-usage.js";

const bytes = (text: string) => new TextEncoder().encode(text);

/** Feeds the text in pieces of `size` bytes, splitting lines and multi-byte characters. */
function read(contentType: string | null, text: string, size = 7) {
  const reader = new UpstreamUsageReader(contentType);
  const all = bytes(text);
  for (let at = 0; at < all.length; at += size) reader.push(all.subarray(at, at + size));
  return reader.finish();
}

it("reads usage from a chat.completion body, in pieces", () => {
  const body = JSON.stringify({
    object: "chat.completion",
    choices: [{ message: { content: "héllo ✓" } }],
    usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
  });
  assert.deepEqual(read("application/json", body), { promptTokens: 12, completionTokens: 5 });
  assert.equal(read("application/json", '{"object":"chat.completion"}'), null);
  assert.equal(read("application/json", "not json"), null);
  assert.deepEqual(read("application/json", '{"usage":{"prompt_tokens":-1,"completion_tokens":"9"}}'), {
    promptTokens: 0,
    completionTokens: 0,
  });
});

it("reads the last usage of an SSE stream, CRLF or LF, with or without a final newline", () => {
  const chunk = (usage: unknown) =>
    `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [], usage })}`;
  const stream = [
    chunk(null),
    ": keep-alive",
    chunk({ prompt_tokens: 3, completion_tokens: 4 }),
    "data: [DONE]",
    "",
  ];
  assert.deepEqual(read("text/event-stream; charset=utf-8", stream.join("\n\n")), {
    promptTokens: 3,
    completionTokens: 4,
  });
  assert.deepEqual(read("text/event-stream", stream.join("\r\n\r\n"), 3), {
    promptTokens: 3,
    completionTokens: 4,
  });
  assert.deepEqual(read("text/event-stream", chunk({ prompt_tokens: 1, completion_tokens: 2 })), {
    promptTokens: 1,
    completionTokens: 2,
  });
  assert.equal(read("text/event-stream", `${chunk(null)}\n\ndata: [DONE]\n\n`), null);
});

it("skips an SSE line too long to hold and reads the lines after it", () => {
  const long = `data: {"usage":{"prompt_tokens":99,"completion_tokens":99},"pad":"${"x".repeat(1_200_000)}"}`;
  const usage = 'data: {"usage":{"prompt_tokens":2,"completion_tokens":1}}';
  assert.deepEqual(read("text/event-stream", `${long}\n\n${usage}\n\n`, 64 * 1024), {
    promptTokens: 2,
    completionTokens: 1,
  });
  assert.equal(read("text/event-stream", long, 64 * 1024), null);
});

it("reads a Responses API answer's usage: the response's, or the response.completed event's", () => {
  const usage = { input_tokens: 7, output_tokens: 3, total_tokens: 10 };
  assert.deepEqual(read("application/json", JSON.stringify({ object: "response", output: [], usage })), {
    promptTokens: 7,
    completionTokens: 3,
  });
  const event = (type: string, payload: unknown) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...(payload as object) })}`;
  const stream = [
    event("response.created", { response: { object: "response", usage: null } }),
    event("response.output_text.delta", { delta: 'a "usage" in the text' }),
    event("response.completed", { response: { object: "response", usage } }),
    "",
  ];
  assert.deepEqual(read("text/event-stream", stream.join("\n\n")), { promptTokens: 7, completionTokens: 3 });
  assert.equal(read("text/event-stream", stream.slice(0, 2).join("\n\n")), null, "cut before it completed");
});
