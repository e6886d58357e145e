// GET /v1/jobs/:id/events: the job's stored events as Server-Sent Events.
// Each frame carries `id: <seq>` and `event: <type>`; a client resumes with
// Last-Event-ID (or ?lastEventId=); the stream ends after the `end` event.

import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import type { ApiEnv, ServerContext } from "../context.js";
import { badRequest } from "../http/api-error.js";
import type { StoredJobEvent } from "../store/job-store.js";
import { MAX_STORED_INTEGER } from "../wire.js";
import { jobOr404 } from "./access.js";

const encoder = new TextEncoder();
/** Every subscriber of a job gets the same event objects: encode each frame once for all of them. */
const frames = new WeakMap<StoredJobEvent, Uint8Array>();

function frameOf(event: StoredJobEvent): Uint8Array {
  let bytes = frames.get(event);
  if (!bytes) {
    bytes = encoder.encode(`id: ${event.seq}\nevent: ${event.type}\ndata: ${event.data}\n\n`);
    frames.set(event, bytes);
  }
  return bytes;
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function eventRoutes(ctx: ServerContext) {
  const app = new Hono<ApiEnv>();
  app.get("/v1/jobs/:id/events", async (c) => {
    const job = await jobOr404(ctx, c, c.req.param("id"));
    const raw = c.req.header("last-event-id") ?? c.req.query("lastEventId") ?? "0";
    const after = Number(raw);
    if (!Number.isSafeInteger(after) || after < 0 || after > MAX_STORED_INTEGER)
      throw badRequest(`"Last-Event-ID" must be an event id: an integer from 0 to ${MAX_STORED_INTEGER}`);
    // Written straight to the Node response: one encoded frame per event is
    // shared by every subscriber, so fan-out costs a socket write each.
    const res = c.env.outgoing;
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    let unsubscribe = () => {};
    let ping: NodeJS.Timeout | undefined;
    const finish = () => {
      clearInterval(ping);
      unsubscribe();
      if (!res.writableEnded) res.end();
    };
    res.on("close", finish);
    unsubscribe = await ctx.events.subscribe(job.id, after, (events) => {
      if (res.writableEnded) return;
      res.write(concat(events.map(frameOf)));
      if (events.some((e) => e.type === "end")) finish();
    });
    if (res.writableEnded) unsubscribe();
    else ping = setInterval(() => res.write(": ping\n\n"), ctx.sseKeepAliveMs);
    return RESPONSE_ALREADY_SENT;
  });
  return app;
}
