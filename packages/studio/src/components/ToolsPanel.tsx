// The Playground's tools and output settings: function definitions as a JSON
// editor with tool_choice, and the JSON mode (any JSON object, or JSON matching
// a schema) enforced by constrained decoding (docs/tools.md).
import type { ChatMessage, ResponseFormat, ToolCall, ToolChoice, ToolDefinition } from "@svc/wire";

export interface ToolSettings {
  /** A JSON array of OpenAI function definitions; "" for none. */
  toolsText: string;
  toolChoice: "auto" | "none" | "required";
  format: "text" | "json_object" | "json_schema";
  /** The JSON Schema of the "json_schema" format. */
  schemaText: string;
}

export const NO_TOOLS: ToolSettings = { toolsText: "", toolChoice: "auto", format: "text", schemaText: "" };

const TOOLS_EXAMPLE = `[
  {
    "type": "function",
    "function": {
      "name": "lookup_order",
      "description": "Status of an order",
      "parameters": {
        "type": "object",
        "properties": { "order_id": { "type": "string" } },
        "required": ["order_id"]
      }
    }
  }
]`;

const SCHEMA_EXAMPLE = `{
  "type": "object",
  "properties": { "answer": { "type": "string" } },
  "required": ["answer"],
  "additionalProperties": false
}`;

/** The request fields the settings ask for, or a message naming what is wrong. */
export function toolRequestOf(
  s: ToolSettings,
): { tools?: ToolDefinition[]; toolChoice?: ToolChoice; responseFormat?: ResponseFormat } | string {
  const out: { tools?: ToolDefinition[]; toolChoice?: ToolChoice; responseFormat?: ResponseFormat } = {};
  if (s.toolsText.trim()) {
    let tools: unknown;
    try {
      tools = JSON.parse(s.toolsText);
    } catch (e) {
      return `Tools: not valid JSON (${(e as Error).message})`;
    }
    if (!Array.isArray(tools)) return "Tools: expected a JSON array of function definitions";
    if (tools.length > 0) {
      out.tools = tools as ToolDefinition[];
      out.toolChoice = s.toolChoice;
    }
  }
  if (s.format === "json_object") out.responseFormat = { type: "json_object" };
  if (s.format === "json_schema") {
    let schema: unknown;
    try {
      schema = JSON.parse(s.schemaText);
    } catch (e) {
      return `JSON schema: not valid JSON (${(e as Error).message})`;
    }
    out.responseFormat = {
      type: "json_schema",
      json_schema: { name: "playground", schema: schema as Record<string, unknown>, strict: true },
    };
  }
  return out;
}

/** The first call of the last assistant turn that no tool message answers yet. */
export function unansweredCall(messages: ChatMessage[]): ToolCall | null {
  const at = messages.findLastIndex((m) => m.role === "assistant");
  const calls = at < 0 ? [] : (messages[at].tool_calls ?? []);
  const answered = new Set(messages.slice(at + 1).map((m) => m.tool_call_id));
  return calls.find((c) => !answered.has(c.id)) ?? null;
}

export function ToolCallList({ calls }: { calls: ToolCall[] }) {
  return (
    <ul className="tool-calls" data-testid="tool-calls">
      {calls.map((c) => (
        <li key={c.id}>
          <code>
            {c.function.name}({c.function.arguments})
          </code>
        </li>
      ))}
    </ul>
  );
}

export function ToolsPanel({
  value,
  onChange,
}: {
  value: ToolSettings;
  onChange: (s: ToolSettings) => void;
}) {
  const set = (patch: Partial<ToolSettings>) => onChange({ ...value, ...patch });
  return (
    <>
      <label className="field">
        <span>Tools (JSON function definitions)</span>
        <textarea
          className="input mono"
          rows={6}
          placeholder={TOOLS_EXAMPLE}
          value={value.toolsText}
          onChange={(e) => set({ toolsText: e.target.value })}
          data-testid="pg-tools"
        />
      </label>
      {value.toolsText.trim() !== "" && (
        <label className="field">
          <span>Tool choice</span>
          <select
            className="input"
            value={value.toolChoice}
            onChange={(e) => set({ toolChoice: e.target.value as ToolSettings["toolChoice"] })}
            data-testid="pg-tool-choice"
          >
            <option value="auto">auto: text or calls</option>
            <option value="required">required: always call</option>
            <option value="none">none: never call</option>
          </select>
        </label>
      )}
      <label className="field">
        <span>Output</span>
        <select
          className="input"
          value={value.format}
          onChange={(e) => {
            const format = e.target.value as ToolSettings["format"];
            set({
              format,
              schemaText: format === "json_schema" && !value.schemaText ? SCHEMA_EXAMPLE : value.schemaText,
            });
          }}
          data-testid="pg-format"
        >
          <option value="text">Text</option>
          <option value="json_object">JSON object</option>
          <option value="json_schema">JSON schema</option>
        </select>
      </label>
      {value.format === "json_schema" && (
        <label className="field">
          <span>JSON schema</span>
          <textarea
            className="input mono"
            rows={6}
            value={value.schemaText}
            onChange={(e) => set({ schemaText: e.target.value })}
            data-testid="pg-schema"
          />
        </label>
      )}
    </>
  );
}
