import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { test } from "node:test";
import { BackgroundTurns, MAX_DEFER_MS } from "./background-turns.js";

const turn = () => new Promise((resolve) => setImmediate(resolve));

test("steps run a few per turn of the event loop, in order", async () => {
  const turns = new BackgroundTurns(2);
  const ran: number[] = [];
  for (let i = 0; i < 5; i++) void turns.turn().then(() => ran.push(i));
  assert.deepEqual(ran, []);
  await turn();
  assert.deepEqual(ran, [0, 1]);
  await turn();
  assert.deepEqual(ran, [0, 1, 2, 3]);
  await turn();
  assert.deepEqual(ran, [0, 1, 2, 3, 4]);
  assert.equal(turns.pending, 0);
});

test("steps wait while connections are being accepted, and run once the accept queue is empty", async () => {
  const server: Server = createServer((socket) => socket.on("error", () => {}));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const turns = new BackgroundTurns();
  turns.watch(server);
  let accepted = 0;
  server.on("connection", () => accepted++);
  const { port } = server.address() as { port: number };
  const clients: Socket[] = Array.from({ length: 40 }, () =>
    connect(port, "127.0.0.1").on("error", () => {}),
  );
  // The connects run in a next tick; then the event loop is held while the kernel completes the
  // handshakes, so 40 connections wait to be accepted before the first turn.
  await new Promise((resolve) => process.nextTick(resolve));
  const until = performance.now() + 100;
  while (performance.now() < until);
  const started = performance.now();
  await turns.turn();
  // libuv accepts one connection per turn: the step ran only after 40 turns that each accepted one, unless
  // accepting took longer than the longest deferral (a loaded machine), when one step goes through anyway.
  if (performance.now() - started < MAX_DEFER_MS) assert.equal(accepted, 40);
  else assert.ok(accepted >= 1, `${accepted} accepted before the step`);
  for (const c of clients) c.destroy();
  await new Promise((resolve) => server.close(resolve));
});

test("a flood of connections lets one step through every MAX_DEFER_MS", async () => {
  // Stands in for a listener that accepts a connection every turn, without end.
  const flood = new EventEmitter();
  let flooding = true;
  const accept = () => {
    flood.emit("connection");
    if (flooding) setImmediate(accept);
  };
  accept();
  const turns = new BackgroundTurns();
  turns.watch(flood as unknown as Server);
  const waits: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    await turns.turn();
    waits.push(performance.now() - started);
  }
  flooding = false;
  for (const wait of waits) {
    assert.ok(wait >= MAX_DEFER_MS - 1, `waited ${wait} ms`);
    // Bounded, with room for a loaded machine's scheduling delays.
    assert.ok(wait < MAX_DEFER_MS + 1000, `waited ${wait} ms`);
  }
});
