// Wire types of tool calling and structured output, in OpenAI's exact shapes
// (chat completions' tools, tool_choice, response_format, tool_calls and their
// streamed deltas). docs/tools.md describes how svc serves them.

/** One function call: `arguments` is the JSON text of the arguments object. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A function the model may call; `parameters` is a JSON Schema of its arguments (docs/tools.md#schemas). */
export interface ToolDefinition {
  type: "function";
  function: {
    name: string;
    description?: string;
    parameters?: Record<string, unknown>;
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
