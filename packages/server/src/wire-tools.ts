// Wire types of tool calling and structured output, in OpenAI's exact shapes
// (chat completions' tools, tool_choice, response_format, tool_calls and their
// streamed deltas). docs/tools.md describes how svc serves them.

// A call and a function definition are the engine's types: datasets and
// generation read the same shapes the wire carries.
export type { ToolCall, ToolDefinition } from "@svc/engine";

/** "auto" (the default with tools), "none", "required", or one named function. */
export type ToolChoice = "auto" | "none" | "required" | { type: "function"; function: { name: string } };

/** What the answer's text must be: free text, any JSON object, or JSON matching a schema. */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
      type: "json_schema";
      json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean };
    };

/** A streamed piece of tool call `index`: the first carries its id, type and name, later ones more arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: "function";
  function: { name?: string; arguments: string };
}
