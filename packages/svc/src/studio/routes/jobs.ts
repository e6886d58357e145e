// /api/jobs: list, detail, artifacts, exports, cancel, the profile of a job's training
// dataset for its base model and maxLength, and the SSE proxy of a job's
// events (Last-Event-ID passed through so the browser's reconnect resumes).
// Each JSON answer is the cloud route's (`satisfies Answer<...>`), which the page reads.
import {
  type Answer,
  DEFAULT_PROFILE_MAX_LENGTH,
  type ExportFormat,
  type Job,
  LAST_EVENT_ID_HEADER,
  LAST_EVENT_ID_QUERY,
} from "@svc/wire";
import { Hono } from "hono";
import { existingProjectSession, projectSessionOr404 } from "../cloud-session.js";
import type { StudioEnv } from "../env.js";

export function jobRoutes(env: StudioEnv): Hono {
  const app = new Hono();

  const session = (jobId: string) => projectSessionOr404(env.projectDir, `job ${jobId}`);

  // No state file means no runs yet: answer without calling the cloud API.
  app.get("/", async (c) => {
    const s = await existingProjectSession(env.projectDir);
    const jobs: Job[] = s ? await s.client.listJobs() : [];
    return c.json({ jobs } satisfies Answer<"listJobs">);
  });

  app.get("/:id", async (c) => {
    const id = c.req.param("id");
    return c.json({ job: await (await session(id)).client.getJob(id) } satisfies Answer<"getJob">);
  });

  app.get("/:id/artifacts", async (c) => {
    const id = c.req.param("id");
    return c.json({
      artifacts: await (await session(id)).client.listArtifacts(id),
    } satisfies Answer<"listArtifacts">);
  });

  // Exports of the job's final adapter: written by the cloud API, downloaded through here.
  app.post("/:id/exports", async (c) => {
    const id = c.req.param("id");
    const body = (await c.req.json().catch(() => ({}))) as { format?: ExportFormat; quant?: string };
    const { client } = await session(id);
    const info = await client.createExport({
      adapter: { kind: "final", jobId: id },
      format: body.format as ExportFormat,
      ...(body.quant ? { quant: body.quant } : {}),
    });
    return c.json({ export: info } satisfies Answer<"createExport">, 202);
  });

  app.get("/:id/exports/:exportId", async (c) => {
    const { client } = await session(c.req.param("id"));
    return c.json({ export: await client.getExport(c.req.param("exportId")) } satisfies Answer<"getExport">);
  });

  app.get("/:id/exports/:exportId/:file", async (c) => {
    const { client } = await session(c.req.param("id"));
    const upstream = await client.openExportFile(c.req.param("exportId"), c.req.param("file"), {
      signal: c.req.raw.signal,
    });
    const headers = new Headers({ "Content-Type": "application/octet-stream" });
    for (const name of ["content-length", "content-disposition"]) {
      const value = upstream.headers.get(name);
      if (value) headers.set(name, value);
    }
    return new Response(upstream.body, { headers });
  });

  // 202 while the cloud API still computes it, as upstream.
  app.get("/:id/profile", async (c) => {
    const id = c.req.param("id");
    const { client } = await session(id);
    const job = await client.getJob(id);
    const profile = await client.getDatasetProfile(job.datasetId, {
      baseModel: job.baseModel,
      maxLength: job.hyperparameters.lora?.maxLength ?? DEFAULT_PROFILE_MAX_LENGTH,
    });
    return c.json(
      { profile } satisfies Answer<"getDatasetProfile">,
      profile.status === "pending" ? 202 : 200,
    );
  });

  app.post("/:id/cancel", async (c) => {
    const id = c.req.param("id");
    return c.json({ job: await (await session(id)).client.cancelJob(id) } satisfies Answer<"cancelJob">);
  });

  app.get("/:id/events", async (c) => {
    const id = c.req.param("id");
    const s = await session(id);
    const upstream = await s.client.openJobEvents(id, {
      // The query form is for a page that opens a new EventSource after its old one gave up (it cannot set headers).
      lastEventId: c.req.header(LAST_EVENT_ID_HEADER) ?? c.req.query(LAST_EVENT_ID_QUERY),
      signal: c.req.raw.signal,
    });
    return new Response(upstream.body && endOnUpstreamError(upstream.body), {
      status: 200,
      headers: {
        "Content-Type": "text/event-stream; charset=utf-8",
        "Cache-Control": "no-cache, no-transform",
        "X-Accel-Buffering": "no",
      },
    });
  });

  return app;
}

/**
 * The proxied stream ends (rather than errors) when the cloud API dies mid-stream:
 * the browser reconnects either way, and svc dev's output stays free of a stack
 * trace per open job page; the outage itself is what the page's banner reports.
 */
function endOnUpstreamError(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch {
        controller.close();
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
