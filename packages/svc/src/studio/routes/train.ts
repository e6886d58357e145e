// POST /api/train: runs `svc start` in the project folder and streams its stdout
// and stderr, byte for byte, as text/plain. The job id goes in the X-Svc-Job-Id
// response header: headers are held back until `svc start` prints the id
// (its first line, "job <uuid> submitted: …"), the process exits, or
// JOB_ID_WAIT_MS passes; the output produced meanwhile is buffered, not lost.
import { spawn } from "node:child_process";
import { JOB_ID_HEADER, START_OUTPUT_JOB_ID } from "@svc/wire";
import { Hono } from "hono";
import { svcBinPath } from "../../sdk/config.js";
import type { StudioEnv } from "../env.js";

export { JOB_ID_HEADER } from "@svc/wire";
export const JOB_ID_WAIT_MS = 15_000;

export function runSvcStart(projectDir: string, signal: AbortSignal): Promise<Response> {
  const child = spawn(process.execPath, [svcBinPath(), "start"], {
    cwd: projectDir,
    env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    // The browser went away: stop watching (the job itself keeps running).
    cancel() {
      closed = true;
      child.kill("SIGINT");
    },
  });
  const push = (bytes: Uint8Array) => {
    if (!closed) controller.enqueue(bytes);
  };
  const finish = () => {
    if (!closed) {
      closed = true;
      controller.close();
    }
  };
  signal.addEventListener("abort", () => child.kill("SIGINT"), { once: true });

  return new Promise((resolve) => {
    let answered = false;
    let seen = "";
    const answer = (jobId: string | null) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      const headers: Record<string, string> = {
        "Content-Type": "text/plain; charset=utf-8",
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
      };
      if (jobId) headers[JOB_ID_HEADER] = jobId;
      resolve(new Response(body, { headers }));
    };
    const timer = setTimeout(() => answer(null), JOB_ID_WAIT_MS);
    const onData = (chunk: Buffer) => {
      push(new Uint8Array(chunk));
      if (!answered) {
        seen += chunk.toString("utf8");
        const id = seen.match(START_OUTPUT_JOB_ID)?.[1];
        if (id) answer(id);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("error", (err) => {
      push(new TextEncoder().encode(`svc dev: could not run svc start: ${err.message}\n`));
      finish();
      answer(null);
    });
    child.on("close", () => {
      finish();
      answer(null);
    });
  });
}

export function trainRoutes(env: StudioEnv): Hono {
  const app = new Hono();
  app.post("/", (c) => runSvcStart(env.projectDir, c.req.raw.signal));
  return app;
}
