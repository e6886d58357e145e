// checkToolRequest: every schema of a request is checked, refusals name the
// field and the keyword, and a near-limit schema is compiled in slices, so
// the API's event loop keeps answering other requests meanwhile (checked in
// one piece, such a schema held it 10-100 ms on this machine).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ResponseFormat, ToolDefinition } from "@svc/wire";
import { ApiError } from "../http/api-error.js";
import { checkToolRequest } from "./chat-request.js";

const NAMES = { tools: "tools", toolChoice: "tool_choice", responseFormat: "response_format" };

/** An object of `count` required string properties: near MAX_SUBSCHEMAS (2000) at 1990. */
function wideSchema(count: number, prefix = "field"): Record<string, unknown> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}_${i}`);
  return {
    type: "object",
    properties: Object.fromEntries(names.map((name) => [name, { type: "string" }])),
    required: names,
  };
}

const tool = (name: string, parameters: Record<string, unknown>): ToolDefinition => ({
  type: "function",
  function: { name, parameters },
});
const format = (schema: Record<string, unknown>): ResponseFormat => ({
  type: "json_schema",
  json_schema: { name: "form", schema },
});

async function refusal(run: Promise<void>): Promise<ApiError> {
  const error = await run.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiError, `expected a refusal, got ${String(error)}`);
  return error;
}

/** How many turns the event loop took while `work` ran (a callback re-queued each turn), and its longest turn. */
async function loopWhile(work: () => Promise<void>): Promise<{ turns: number; longest: number }> {
  let turns = 0;
  let longest = 0;
  let last = performance.now();
  let running = true;
  const turn = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    turns++;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  try {
    await work();
    return { turns, longest: Math.max(longest, performance.now() - last) };
  } finally {
    running = false;
  }
}

describe("checkToolRequest", () => {
  it("refuses an unsupported keyword in any tool or the response format, naming the field", async () => {
    const bad = { type: "string", pattern: "^a" };
    const inTool = await refusal(
      checkToolRequest({ tools: [tool("a", wideSchema(3)), tool("b", bad)] }, NAMES),
    );
    assert.equal(inTool.status, 400);
    assert.equal(inTool.code, "unsupported_schema");
    assert.match(inTool.message, /^"tools\[1\]\.function\.parameters" \/pattern: .*"pattern"/);
    const inFormat = await refusal(checkToolRequest({ responseFormat: format(bad) }, NAMES));
    assert.match(inFormat.message, /^"response_format\.json_schema\.schema" /);
    await checkToolRequest(
      { tools: [tool("a", wideSchema(3))], responseFormat: format(wideSchema(3)) },
      NAMES,
    );
  });

  it("holds all of a request's tools to one budget, and the response format to its own", async () => {
    const tools = [tool("a", wideSchema(1000, "a")), tool("b", wideSchema(1000, "b"))];
    const over = await refusal(checkToolRequest({ tools }, NAMES));
    assert.match(over.message, /^"tools\[1\]\.function\.parameters" .*2000/);
    await checkToolRequest(
      { tools: tools.slice(0, 1), responseFormat: format(wideSchema(1000, "c")) },
      NAMES,
    );
  });

  it("checks tool_choice against the tools before any schema", async () => {
    const missing = await refusal(
      checkToolRequest(
        {
          tools: [tool("a", { type: "string", pattern: "x" })],
          toolChoice: { type: "function", function: { name: "b" } },
        },
        NAMES,
      ),
    );
    assert.match(missing.message, /^"tool_choice\.function\.name" "b" is not one of "tools"/);
    const alone = await refusal(checkToolRequest({ toolChoice: "required" }, NAMES));
    assert.match(alone.message, /"tool_choice" needs "tools"/);
  });

  it("compiles a near-limit schema in slices: the event loop turns between them", async () => {
    // near both limits: a tool and the response format of 1990 properties each
    const request = (prefix: string) => ({
      tools: [tool("fill", wideSchema(1990, `${prefix}t`))],
      responseFormat: format(wideSchema(1990, `${prefix}r`)),
    });
    // the first such check in a process also compiles the checker's code: measured on the second
    await checkToolRequest(request("warm"), NAMES);
    const run = await loopWhile(() => checkToolRequest(request("f"), NAMES));
    console.log(
      `chat-request: two 1990-property schemas checked over ${run.turns} turns of the event loop, the longest ${run.longest.toFixed(1)} ms`,
    );
    // checked in one piece, the loop could not turn until the check was over
    assert.ok(run.turns >= 1, `the event loop turned ${run.turns} times`);
  });
});
