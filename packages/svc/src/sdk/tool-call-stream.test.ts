import assert from "node:assert/strict";
import { test } from "node:test";
import type { ToolCall } from "@svc/wire";
import { ToolCallAssembler } from "./tool-call-stream.js";

test("tool call deltas: each call is handed over whole, in order, when the next starts or the stream ends", () => {
  const calls: ToolCall[] = [];
  const assembler = new ToolCallAssembler((c) => calls.push(c));
  assembler.add({
    index: 0,
    id: "call_a",
    type: "function",
    function: { name: "lookup_order", arguments: "" },
  });
  assembler.add({ index: 0, function: { arguments: '{"order_id":' } });
  assembler.add({ index: 0, function: { arguments: '"A1"}' } });
  assert.equal(calls.length, 0, "a call is not handed over while its arguments may still grow");
  assembler.add({
    index: 1,
    id: "call_b",
    type: "function",
    function: { name: "create_ticket", arguments: "{}" },
  });
  assert.deepEqual(calls, [
    { id: "call_a", type: "function", function: { name: "lookup_order", arguments: '{"order_id":"A1"}' } },
  ]);
  assembler.finish();
  assert.deepEqual(calls[1], {
    id: "call_b",
    type: "function",
    function: { name: "create_ticket", arguments: "{}" },
  });
  assembler.finish();
  assert.equal(calls.length, 2, "finishing twice hands nothing over again");
});
