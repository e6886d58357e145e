// What a chat request's tools and response_format ask of the generation: the
// grammar it must match, and the tool syntax its output is read with
// (docs/tools.md). A model whose calls svc cannot read is refused tools.
import { type OutputGrammar, type ToolSyntax, toolCallGrammar } from "@svc/engine";
import { badRequest } from "../http/api-error.js";
import type { ToolRequest } from "./chat-request.js";

export interface ToolPlan {
  grammar?: OutputGrammar;
  /** The syntax to read tool calls from the output with; null when the output is not read for calls. */
  syntax: ToolSyntax | null;
}

export function planTools(request: ToolRequest, syntax: ToolSyntax | null, toolsField: string): ToolPlan {
  const { tools = [], toolChoice = "auto", parallelToolCalls = true, responseFormat } = request;
  const json: OutputGrammar | null =
    responseFormat?.type === "json_object"
      ? { kind: "json", schema: null }
      : responseFormat?.type === "json_schema"
        ? { kind: "json", schema: responseFormat.json_schema.schema ?? null }
        : null;
  if (tools.length === 0 || toolChoice === "none") return { grammar: json ?? undefined, syntax: null };
  if (syntax === null)
    throw badRequest(
      `"${toolsField}": this model's chat template writes tool calls in a syntax svc cannot read (docs/tools.md#syntax); send the request without tools`,
      "unsupported_tool_syntax",
    );
  const options = { tools, toolChoice, parallelToolCalls };
  const calls = toolCallGrammar(syntax, options) as OutputGrammar;
  if (json === null) return { grammar: calls, syntax };
  // With a response format, "auto" answers with calls or with the JSON the format asks for.
  if (toolChoice !== "auto") return { grammar: calls, syntax };
  const required = toolCallGrammar(syntax, { ...options, toolChoice: "required" }) as OutputGrammar;
  return { grammar: { kind: "choice", options: [required, json] }, syntax };
}
