// Opening an event stream costs a few database reads (the bearer token, the
// job, its org) that SQLite answers synchronously, so a burst of hundreds of
// stream requests arriving together would run back to back in one turn of
// the event loop and hold up every other request (a /healthz, an edge call)
// for that long. Stream requests are therefore admitted in background turns
// of the event loop (BackgroundTurns: a few per turn, and none while
// connections wait to be accepted): a burst of 500 takes many short turns,
// with other I/O between.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { BackgroundTurns } from "./background-turns.js";

type Listener = (req: IncomingMessage, res: ServerResponse) => unknown;

const EVENT_STREAM_PATH = /^\/v1\/jobs\/[^/?]+\/events(?:\?|$)/;

/** Wraps the API's request listener: GET /v1/jobs/:id/events waits for a background turn, everything else goes at once. */
export function admitEventStreamsInTurn(listener: Listener, turns: BackgroundTurns): Listener {
  return (req, res) => {
    if (req.method !== "GET" || !EVENT_STREAM_PATH.test(req.url ?? "")) return listener(req, res);
    void turns.turn().then(() => {
      if (!req.destroyed) listener(req, res);
    });
  };
}
