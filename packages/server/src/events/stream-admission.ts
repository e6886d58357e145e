// Opening an event stream costs a few database reads (the bearer token, the
// job, its org) that SQLite answers synchronously, so a burst of hundreds of
// stream requests arriving together would run back to back in one turn of
// the event loop and hold up every other request (a /healthz, an edge call)
// for that long. Stream requests are therefore admitted one per turn of the
// event loop: a burst of 500 takes 500 short turns, with other I/O between.
import type { IncomingMessage, ServerResponse } from "node:http";

type Listener = (req: IncomingMessage, res: ServerResponse) => unknown;

const EVENT_STREAM_PATH = /^\/v1\/jobs\/[^/?]+\/events(?:\?|$)/;

/** Wraps the API's request listener: GET /v1/jobs/:id/events waits its turn, everything else goes at once. */
export function admitEventStreamsInTurn(listener: Listener): Listener {
  const waiting: [IncomingMessage, ServerResponse][] = [];
  let scheduled = false;
  const next = () => {
    const entry = waiting.shift();
    if (entry && !entry[0].destroyed) listener(entry[0], entry[1]);
    scheduled = waiting.length > 0;
    if (scheduled) setImmediate(next);
  };
  return (req, res) => {
    if (req.method !== "GET" || !EVENT_STREAM_PATH.test(req.url ?? "")) return listener(req, res);
    waiting.push([req, res]);
    if (!scheduled) {
      scheduled = true;
      setImmediate(next);
    }
  };
}
