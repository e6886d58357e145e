// GET /healthz of the cloud API and of the edge, one after the other, every
// interval, each on a fresh connection, from its own process (so the load a
// test makes in its own process does not delay the measurement); then the
// same request to a control: a bare Node HTTP server in a process of its own
// that does nothing else. What the control waits is what the machine's other
// work costs any process; prints one JSON line per round:
// { at, api, apiConnect (of api, to the TCP connection), edge, control } in
// milliseconds (-1: it failed).
//
//   node healthz-probe.js <api url> <edge url> [interval ms]
import { spawn } from "node:child_process";
import { get } from "node:http";

const [apiUrl, edgeUrl, interval = "50"] = process.argv.slice(2);

const control = spawn(
  process.execPath,
  [
    "-e",
    "require('node:http').createServer((q, s) => s.end('{\"ok\":true}')).listen(0, '127.0.0.1', function () { console.log(this.address().port) })",
  ],
  { stdio: ["ignore", "pipe", "inherit"] },
);
process.on("exit", () => control.kill());
process.on("SIGTERM", () => process.exit(0));
const controlUrl = await new Promise<string>((resolve) =>
  control.stdout.once("data", (chunk: Buffer) => resolve(`http://127.0.0.1:${chunk.toString().trim()}`)),
);

/** Milliseconds to the answer (-1: it failed); `connected` gets the milliseconds to the TCP connection. */
function probe(base: string, path: string, connected: (ms: number) => void = () => {}): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = get(`${base}${path}`, { agent: false, timeout: 30_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode === 200 ? performance.now() - started : -1));
    });
    req.on("socket", (socket) => socket.once("connect", () => connected(performance.now() - started)));
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(-1));
  });
}

const round = (ms: number) => Math.round(ms * 10) / 10;
for (;;) {
  const at = Date.now();
  let apiConnect = -1;
  const api = await probe(apiUrl, "/healthz", (ms) => {
    apiConnect = ms;
  });
  const edge = await probe(edgeUrl, "/healthz");
  const bare = await probe(controlUrl, "/");
  process.stdout.write(
    `${JSON.stringify({ at, api: round(api), apiConnect: round(apiConnect), edge: round(edge), control: round(bare) })}\n`,
  );
  await new Promise((resolve) => setTimeout(resolve, Number(interval)));
}
