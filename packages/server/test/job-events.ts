// A job's event stream as tests read it: open it (optionally after an event
// id), read frames and keep-alive comments until a frame, the end or a
// timeout. harness.ts re-exports it.

export interface SseFrame {
  id: string | null;
  event: string | null;
  data: string;
}

export interface SseRead {
  frames: SseFrame[];
  comments: string[];
  /** True when the server closed the stream (rather than the reader stopping). */
  closedByServer: boolean;
}

/**
 * Reads an SSE response until the server closes it, `stopWhen` returns true
 * for a frame, or `timeoutMs` passes.
 */
export async function readSse(
  response: Response,
  options: { stopWhen?: (f: SseFrame) => boolean; timeoutMs?: number } = {},
): Promise<SseRead> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const frames: SseFrame[] = [];
  const comments: string[] = [];
  let buffer = "";
  let closedByServer = false;
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  const timer = setTimeout(() => void reader.cancel(), options.timeoutMs ?? 30_000);
  try {
    outer: for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        closedByServer = Date.now() < deadline;
        break;
      }
      buffer += decoder.decode(value, { stream: true });
      for (let at = buffer.indexOf("\n\n"); at >= 0; at = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const frame: SseFrame = { id: null, event: null, data: "" };
        let isFrame = false;
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) {
            comments.push(line.slice(1).trim());
            continue;
          }
          isFrame = true;
          if (line.startsWith("id:")) frame.id = line.slice(3).trim();
          else if (line.startsWith("event:")) frame.event = line.slice(6).trim();
          else if (line.startsWith("data:"))
            frame.data += (frame.data ? "\n" : "") + line.slice(5).trimStart();
        }
        if (isFrame) {
          frames.push(frame);
          if (options.stopWhen?.(frame)) {
            await reader.cancel();
            break outer;
          }
        }
      }
    }
  } finally {
    clearTimeout(timer);
  }
  return { frames, comments, closedByServer };
}

export function openEvents(
  apiUrl: string,
  token: string,
  jobId: string,
  headers: Record<string, string> = {},
  query = "",
): Promise<Response> {
  return fetch(`${apiUrl}/v1/jobs/${jobId}/events${query}`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
}

/** Waits (reading the SSE stream) until the job has ended; returns every frame. */
export async function eventsUntilEnd(
  apiUrl: string,
  token: string,
  jobId: string,
  timeoutMs = 60_000,
): Promise<SseFrame[]> {
  const read = await readSse(await openEvents(apiUrl, token, jobId), { timeoutMs });
  return read.frames;
}
