// Reads the token counts an upstream reports (`usage` in OpenAI's format)
// from its answer while the edge relays it unchanged: from the JSON body of a
// chat.completion, or from the last SSE chunk that carries `usage` (OpenAI
// sends one only when the client asked for stream_options.include_usage);
// for the Responses API, a response's usage (input_tokens, output_tokens),
// streamed in the response.completed event's response.
// An answer without usage, or one too large to hold, counts 0 tokens.

export interface ReportedUsage {
  promptTokens: number;
  completionTokens: number;
}

/** A non-streamed answer is parsed whole; beyond this size its usage is not read. */
const MAX_JSON_BYTES = 4 * 1024 * 1024;
/** An SSE line longer than this is skipped (a usage chunk is a few hundred bytes). */
const MAX_LINE_CHARS = 1024 * 1024;

function usageIn(text: string): ReportedUsage | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const answer = parsed as { usage?: unknown; response?: { usage?: unknown } } | null;
  // A Responses API event (response.completed) holds the response, and its usage, in `response`.
  const usage = (answer?.usage ?? answer?.response?.usage) as
    | {
        prompt_tokens?: unknown;
        completion_tokens?: unknown;
        input_tokens?: unknown;
        output_tokens?: unknown;
      }
    | null
    | undefined;
  if (typeof usage !== "object" || usage === null) return null;
  const tokens = (n: unknown) => (typeof n === "number" && Number.isSafeInteger(n) && n > 0 ? n : 0);
  return {
    promptTokens: tokens(usage.prompt_tokens ?? usage.input_tokens),
    completionTokens: tokens(usage.completion_tokens ?? usage.output_tokens),
  };
}

export class UpstreamUsageReader {
  private readonly sse: boolean;
  private readonly decoder = new TextDecoder();
  /** JSON: the body so far; SSE: the line not yet ended. */
  private text = "";
  private bytes = 0;
  private skipping = false;
  private found: ReportedUsage | null = null;

  constructor(contentType: string | null) {
    this.sse = (contentType ?? "").toLowerCase().includes("text/event-stream");
  }

  push(chunk: Uint8Array): void {
    if (!this.sse) {
      this.bytes += chunk.byteLength;
      if (this.bytes <= MAX_JSON_BYTES) this.text += this.decoder.decode(chunk, { stream: true });
      return;
    }
    const lines = (this.text + this.decoder.decode(chunk, { stream: true })).split("\n");
    this.text = lines.pop() ?? "";
    for (const line of lines) {
      if (this.skipping) this.skipping = false;
      else this.line(line);
    }
    if (this.text.length > MAX_LINE_CHARS) {
      this.text = "";
      this.skipping = true;
    }
  }

  private line(raw: string): void {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (!line.startsWith("data:")) return;
    const data = line.slice(5).trim();
    if (!data.startsWith("{") || !data.includes('"usage"')) return;
    this.found = usageIn(data) ?? this.found;
  }

  /** The usage the answer reported, or null. */
  finish(): ReportedUsage | null {
    if (this.sse) {
      if (!this.skipping) this.line(this.text + this.decoder.decode());
      return this.found;
    }
    return this.bytes <= MAX_JSON_BYTES ? usageIn(this.text + this.decoder.decode()) : null;
  }
}
