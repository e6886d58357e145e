// GET /v1/jobs/:id/events: the job's stored events as Server-Sent Events.
// Each frame carries `id: <seq>` and `event: <type>`; a client resumes with
// Last-Event-ID (or ?lastEventId=); the stream ends after the `end` event.
// Streams are capped per identity and per job (events/stream-caps.ts); each
// one's send buffer is bounded (events/sse-connection.ts).

import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { LAST_EVENT_ID_HEADER, LAST_EVENT_ID_QUERY } from "@svc/wire";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { SseConnection } from "../events/sse-connection.js";
import { parseLastEventId } from "../http/validate.js";
import { jobOr404 } from "./access.js";

export function eventRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/jobs/:id/events", async (c) => {
    const job = await jobOr404(ctx, c, c.req.param("id"));
    const after = parseLastEventId(c.req.header(LAST_EVENT_ID_HEADER) ?? c.req.query(LAST_EVENT_ID_QUERY));
    const release = ctx.eventStreams.open(c, c.get("user").id, job.id);
    // Written straight to the Node response: the hub hands every subscriber
    // the same encoded frames, so fan-out costs a socket write each.
    const res = c.env.outgoing;
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    const connection = new SseConnection(res, {
      bufferBytes: ctx.eventStreams.limits.bufferBytes,
      keepAliveMs: ctx.sseKeepAliveMs,
    });
    const unsubscribe = ctx.events.subscribe(job.id, after, connection);
    const close = () => {
      unsubscribe();
      release();
    };
    // A client gone before this point closed nothing we listen to.
    if (res.destroyed || !res.socket || res.socket.destroyed) close();
    else res.on("close", close);
    return RESPONSE_ALREADY_SENT;
  });
  return app;
}
