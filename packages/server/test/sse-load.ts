// Event-stream clients for load tests, cheap enough that hundreds of them in
// the test process do not become the load themselves:
// - a non-reader: a raw socket that sends the request and never reads;
// - a drainer: a raw socket that reads and throws bytes away, keeping only the
//   last few chunks, to find the `end` (and, when the server drops it, the
//   last whole frame's id to resume after);
// - a follower: fetch + a real SSE parse of every frame, reconnecting with
//   Last-Event-ID like EventSource, returning every id it was given.
// Plus a /healthz prober run as its own process, and the server's RSS.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readSse } from "./job-events.js";

function request(apiUrl: string, jobId: string, token: string, lastEventId: number): Socket {
  const url = new URL(apiUrl);
  const socket = connect(Number(url.port), url.hostname);
  socket.write(
    `GET /v1/jobs/${jobId}/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\n` +
      `Last-Event-ID: ${lastEventId}\r\n\r\n`,
  );
  return socket;
}

/** A client that opens the stream and never reads: the socket stays paused. */
export function openNonReader(apiUrl: string, jobId: string, token: string): Socket {
  const socket = request(apiUrl, jobId, token, 0);
  socket.pause();
  socket.on("error", () => {});
  return socket;
}

/**
 * Whether the server has closed a non-reader's connection: reads what is
 * waiting and resolves true at its close, false when it stays open `waitMs`.
 */
export function closedByServer(socket: Socket, waitMs: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), waitMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
    socket.resume();
  });
}

/**
 * Whether the kernel still holds `socket`'s connection (Linux /proc/net/tcp):
 * once the server resets a non-reader's connection it is gone from there,
 * though the paused socket has not read that yet.
 */
export function connectionOpen(socket: Socket): boolean {
  if (socket.connecting || socket.localPort === undefined) return !socket.destroyed;
  const port = (n: number | undefined) => `:${(n ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
  const [local, remote] = [port(socket.localPort), port(socket.remotePort)];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"])
    for (const line of readFileSync(table, "latin1").split("\n")) {
      const [, from, to] = line.trim().split(/\s+/);
      if (from?.endsWith(local) && to?.endsWith(remote)) return true;
    }
  return false;
}

/** The id of the last whole frame in `text` (raw HTTP/1.1 chunked bytes of an SSE stream), or null. */
export function lastWholeFrameId(text: string): number | null {
  for (let at = text.lastIndexOf("\nid: "); at >= 0; at = text.lastIndexOf("\nid: ", at - 1)) {
    if (text.indexOf("\n\n", at) < 0) continue;
    const id = /^\nid: (\d+)\n/.exec(text.slice(at, at + 32));
    if (id) return Number(id[1]);
  }
  return null;
}

const TAIL_BYTES = 256 * 1024;
const STREAM_DONE = "\r\n0\r\n\r\n";

export interface Drained {
  /** Connections the server closed before the end (each resumed after its last whole frame). */
  reconnects: number;
  ended: boolean;
}

/** Reads the stream to its `end`, discarding bytes; resumes after a dropped connection. */
export async function drain(
  apiUrl: string,
  jobId: string,
  token: string,
  timeoutMs: number,
): Promise<Drained> {
  const deadline = Date.now() + timeoutMs;
  let lastId = 0;
  let reconnects = 0;
  for (;;) {
    const outcome = await new Promise<"ended" | "dropped" | "timeout">((resolve, reject) => {
      const socket = request(apiUrl, jobId, token, lastId);
      const tail: Buffer[] = [];
      let tailBytes = 0;
      let first = true;
      const timer = setTimeout(() => {
        socket.destroy();
        resolve("timeout");
      }, deadline - Date.now());
      const text = () => Buffer.concat(tail).toString("latin1");
      socket.on("data", (chunk: Buffer) => {
        if (first) {
          first = false;
          const status = chunk.subarray(0, 12).toString("latin1");
          if (status !== "HTTP/1.1 200") {
            clearTimeout(timer);
            socket.destroy();
            reject(new Error(`the event stream answered ${chunk.toString("latin1").slice(0, 300)}`));
            return;
          }
        }
        tail.push(chunk);
        tailBytes += chunk.length;
        while (tail.length > 1 && tailBytes - tail[0].length >= TAIL_BYTES) tailBytes -= tail.shift()!.length;
        if (chunk[chunk.length - 1] === 0x0a) {
          const last = Buffer.concat(tail.slice(-2)).toString("latin1");
          if (last.endsWith(STREAM_DONE) && text().includes("\nevent: end\n")) {
            clearTimeout(timer);
            socket.destroy();
            resolve("ended");
          }
        }
      });
      socket.on("error", () => {});
      socket.on("close", () => {
        clearTimeout(timer);
        lastId = lastWholeFrameId(text()) ?? lastId;
        resolve("dropped");
      });
    });
    if (outcome === "ended") return { reconnects, ended: true };
    if (outcome === "timeout") return { reconnects, ended: false };
    reconnects++;
  }
}

export interface Followed {
  ids: number[];
  events: string[];
  reconnects: number;
}

/** Every frame to `end`, parsed, reconnecting with Last-Event-ID after a dropped connection. */
export async function follow(
  apiUrl: string,
  jobId: string,
  token: string,
  timeoutMs: number,
): Promise<Followed> {
  const deadline = Date.now() + timeoutMs;
  const ids: number[] = [];
  const events: string[] = [];
  let reconnects = 0;
  while (Date.now() < deadline) {
    let response: Response;
    try {
      response = await fetch(`${apiUrl}/v1/jobs/${jobId}/events`, {
        headers: { authorization: `Bearer ${token}`, "last-event-id": String(ids.at(-1) ?? 0) },
      });
    } catch {
      reconnects++;
      continue;
    }
    if (response.status !== 200) throw new Error(`the event stream answered ${response.status}`);
    let read: Awaited<ReturnType<typeof readSse>>;
    try {
      read = await readSse(response, { timeoutMs: deadline - Date.now() });
    } catch {
      read = { frames: [], comments: [], closedByServer: true };
    }
    for (const frame of read.frames) {
      ids.push(Number(frame.id));
      events.push(frame.event ?? "");
    }
    if (events.at(-1) === "end") break;
    reconnects++;
  }
  return { ids, events, reconnects };
}

// ---------------------------------------------------------------- measuring

export interface HealthSample {
  at: number;
  /** Milliseconds for GET /healthz (-1: it failed). */
  api: number;
  /** Of `api`, the milliseconds until the TCP connection was up. */
  apiConnect: number;
  edge: number;
  /** The same request to a bare HTTP server in its own process: what the machine's load costs anyone. */
  control: number;
}

const here = dirname(fileURLToPath(import.meta.url));

/** Probes both /healthz every `intervalMs` from a separate process; stop() returns the samples. */
export function probeHealth(apiUrl: string, edgeUrl: string, intervalMs = 50) {
  const proc: ChildProcess = spawn(
    process.execPath,
    [join(here, "healthz-probe.js"), apiUrl, edgeUrl, String(intervalMs)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const samples: HealthSample[] = [];
  let buffer = "";
  proc.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let at = buffer.indexOf("\n"); at >= 0; at = buffer.indexOf("\n")) {
      samples.push(JSON.parse(buffer.slice(0, at)) as HealthSample);
      buffer = buffer.slice(at + 1);
    }
  });
  return {
    /** The prober's process (its control server is a child of it). */
    pid: proc.pid,
    /** The samples taken from `since` on. */
    since: (since: number) => samples.filter((s) => s.at >= since),
    /**
     * Resolves once `n` rounds have been taken from `since` on. A load that
     * ends within a few rounds on a fast machine is held (its non-readers
     * stay connected) until the bound has enough answers to be judged on.
     */
    async rounds(since: number, n: number, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (samples.filter((s) => s.at >= since).length < n) {
        if (Date.now() > deadline) throw new Error(`fewer than ${n} /healthz rounds within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    stop: () => proc.kill(),
  };
}

/** A process's resident memory in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) * 1024 : 0;
}

/** Samples a process's RSS every 100 ms; peak() is the highest since the last reset(). */
export function watchRss(pid: number) {
  let peak = rssOf(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(pid));
    } catch {}
  }, 100);
  timer.unref();
  return {
    peak: () => peak,
    reset: () => {
      peak = rssOf(pid);
    },
    stop: () => clearInterval(timer),
  };
}
