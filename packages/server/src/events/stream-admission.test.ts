import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import { test } from "node:test";
import { BackgroundTurns } from "./background-turns.js";
import { admitEventStreamsInTurn } from "./stream-admission.js";

const request = (method: string, url: string) => ({ method, url, destroyed: false }) as IncomingMessage;
const response = {} as ServerResponse;
const turn = () => new Promise((resolve) => setImmediate(resolve));

test("event-stream requests are handled in background turns (here one per turn), in order; others at once", async () => {
  const handled: string[] = [];
  const listener = admitEventStreamsInTurn((req) => handled.push(req.url ?? ""), new BackgroundTurns(1));
  for (const id of ["a", "b", "c"]) listener(request("GET", `/v1/jobs/${id}/events`), response);
  listener(request("GET", "/healthz"), response);
  listener(request("POST", "/v1/jobs/x/events"), response);
  listener(request("GET", "/v1/jobs/d/events?lastEventId=3"), response);
  assert.deepEqual(handled, ["/healthz", "/v1/jobs/x/events"]);
  await turn();
  assert.deepEqual(handled.slice(2), ["/v1/jobs/a/events"]);
  await turn();
  await turn();
  await turn();
  assert.deepEqual(handled.slice(2), [
    "/v1/jobs/a/events",
    "/v1/jobs/b/events",
    "/v1/jobs/c/events",
    "/v1/jobs/d/events?lastEventId=3",
  ]);
});

test("a stream request whose client left while it waited is not handled", async () => {
  const handled: string[] = [];
  const listener = admitEventStreamsInTurn((req) => handled.push(req.url ?? ""), new BackgroundTurns(1));
  const gone = request("GET", "/v1/jobs/a/events");
  listener(gone, response);
  listener(request("GET", "/v1/jobs/b/events"), response);
  (gone as { destroyed: boolean }).destroyed = true;
  await turn();
  await turn();
  assert.deepEqual(handled, ["/v1/jobs/b/events"]);
});
