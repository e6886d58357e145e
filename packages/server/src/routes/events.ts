// GET /v1/jobs/:id/events: the job's stored events as Server-Sent Events.
// Each frame carries `id: <seq>` and `event: <type>`; a client resumes with
// Last-Event-ID (or ?lastEventId=); the stream ends after the `end` event.
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest } from "../http/api-error.js";
import { jobOr404 } from "./access.js";

export function eventRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/jobs/:id/events", async (c) => {
    const job = await jobOr404(ctx, c, c.req.param("id"));
    const raw = c.req.header("last-event-id") ?? c.req.query("lastEventId") ?? "0";
    const after = Number(raw);
    if (!Number.isInteger(after) || after < 0)
      throw badRequest(`"Last-Event-ID" must be a non-negative integer event id`);
    return streamSSE(c, async (stream) => {
      let finish = () => {};
      const finished = new Promise<void>((resolve) => {
        finish = resolve;
      });
      let writes = Promise.resolve();
      const enqueue = (write: () => Promise<unknown>) => {
        writes = writes.then(write).then(
          () => {},
          () => finish(),
        );
      };
      stream.onAbort(() => finish());
      const unsubscribe = await ctx.events.subscribe(job.id, after, (events) => {
        for (const event of events) {
          enqueue(() => stream.writeSSE({ id: String(event.seq), event: event.type, data: event.data }));
          if (event.type === "end") enqueue(async () => finish());
        }
      });
      const ping = setInterval(() => enqueue(() => stream.write(": ping\n\n")), ctx.sseKeepAliveMs);
      await finished;
      clearInterval(ping);
      unsubscribe();
      await writes;
    });
  });
  return app;
}
