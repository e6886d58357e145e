// Chat messages and tools in OpenAI's format: the data a chat template renders,
// a dataset row holds and tool syntax writes. A leaf (it imports nothing), so
// text/tool-syntax.ts and the public contract (types.ts, which re-exports
// these) can both use it without importing each other.

export type ChatRole = "system" | "user" | "assistant" | "tool";

export interface ChatMessage {
  role: ChatRole;
  /** "" for an assistant message that only calls tools (OpenAI sends null there). */
  content: string;
  /** Assistant messages: the tools it calls (text/tool-calls.ts). */
  tool_calls?: ToolCall[];
  /** Tool messages: the id of the call this message answers. */
  tool_call_id?: string;
  /** Tool messages: the function's name (optional, as in OpenAI's format). */
  name?: string;
}

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
