// Wire types of tool calling and structured output, in OpenAI's exact shapes
// (chat completions' tools, tool_choice, response_format, tool_calls and their
// streamed deltas). docs/tools.md describes how svc serves them.

// A call and a function definition have the same shapes as the engine's
// (datasets and generation read what the wire carries); the wire does not
// depend on the engine, so they are written here too, and
// packages/server/src/wire-engine.test.ts fails the build if the two drift.

/** One function call, in OpenAI's format: `arguments` is the JSON text of the arguments object. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A function the model may call, in OpenAI's format; `parameters` is a JSON Schema of its arguments. */
export interface ToolDefinition {
  type: "function";
  function: {
    name: string;
    description?: string;
    parameters?: Record<string, unknown>;
    /** Arguments constrained to `parameters` exactly (OpenAI's strict mode). */
    strict?: boolean;
  };
}

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
