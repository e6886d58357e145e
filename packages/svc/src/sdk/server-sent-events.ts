// A reader for text/event-stream bodies (the WHATWG "event stream interpretation"):
// lines are split on CR, LF or CRLF, `field: value` pairs accumulate until a blank
// line dispatches the frame, lines starting with ":" are comments.

export interface ServerSentEvent {
  /** The `event:` field; "message" when absent. */
  event: string;
  data: string;
  /** The `id:` field of this frame, if it had one. */
  id: string | undefined;
}

export interface ReadServerSentEventsOptions {
  /** Called for every chunk of bytes received, comments and pings included (idle watchdogs use it). */
  onActivity?: () => void;
}

export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
  options: ReadServerSentEventsOptions = {},
): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  const parser = new ServerSentEventParser();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      options.onActivity?.();
      for (const frame of parser.push(decoder.decode(value, { stream: true }))) yield frame;
    }
    for (const frame of parser.push(`${decoder.decode()}\n\n`)) yield frame;
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}

/** Incremental parser: push text, get the frames it completes. */
export class ServerSentEventParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];
  private id: string | undefined;
  private hasData = false;

  push(text: string): ServerSentEvent[] {
    this.buffer += text;
    const frames: ServerSentEvent[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      // A lone CR at the very end may be the first half of CRLF: wait for more.
      if (m[0] === "\r" && m.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    return frames;
  }

  private line(line: string): ServerSentEvent | null {
    if (line === "") {
      if (!this.hasData && this.event === "") {
        this.id = undefined;
        return null;
      }
      const frame = { event: this.event || "message", data: this.data.join("\n"), id: this.id };
      this.event = "";
      this.data = [];
      this.hasData = false;
      this.id = undefined;
      return frame;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") {
      this.data.push(value);
      this.hasData = true;
    } else if (field === "id" && !value.includes("\0")) this.id = value;
    return null;
  }
}
