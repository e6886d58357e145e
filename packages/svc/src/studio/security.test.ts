import assert from "node:assert/strict";
import { test } from "node:test";
import { parseDevArgs } from "./dev-command.js";
import { parseChatBody } from "./routes/inference.js";
import { acceptsQueryToken, createStudioToken, isAllowedHost, tokenMatches } from "./security.js";
import { injectToken } from "./static-app.js";

test("host guard accepts 127.0.0.1 and localhost, with or without a port, and nothing else", () => {
  for (const h of ["127.0.0.1", "127.0.0.1:4000", "localhost", "localhost:4000", "LOCALHOST:4001"]) {
    assert.equal(isAllowedHost(h), true, h);
  }
  for (const h of [
    undefined,
    "",
    "evil.example",
    "localhost.evil.example",
    "127.0.0.1.nip.io",
    "127.0.0.2",
    "[::1]:4000",
    "localhost:",
    "localhost:abc",
    "a.localhost",
  ]) {
    assert.equal(isAllowedHost(h), false, String(h));
  }
});

test("tokens: 32 random bytes base64url, fresh each time, compared exactly", () => {
  const a = createStudioToken();
  const b = createStudioToken();
  assert.notEqual(a, b);
  assert.equal(Buffer.from(a, "base64url").length, 32);
  assert.equal(tokenMatches(a, a), true);
  assert.equal(tokenMatches(b, a), false);
  assert.equal(tokenMatches(a.slice(1), a), false);
  assert.equal(tokenMatches("", a), false);
  assert.equal(tokenMatches(undefined, a), false);
  assert.equal(tokenMatches(null, a), false);
});

test("only GET of the job-event stream accepts the query token", () => {
  assert.equal(acceptsQueryToken("GET", "/api/jobs/abc/events"), true);
  assert.equal(acceptsQueryToken("POST", "/api/jobs/abc/events"), false);
  assert.equal(acceptsQueryToken("GET", "/api/jobs/abc"), false);
  assert.equal(acceptsQueryToken("GET", "/api/jobs/abc/events/x"), false);
  assert.equal(acceptsQueryToken("POST", "/api/train"), false);
});

test("the token goes into a meta tag in <head>", () => {
  const html = injectToken("<html><head><title>x</title></head><body></body></html>", "TOKEN_1");
  assert.match(html, /<meta name="svc-studio-token" content="TOKEN_1" \/>\s*<\/head>/);
});

test("svc dev arguments: default 4000, --port N / --port=N, clear errors", () => {
  assert.deepEqual(parseDevArgs([]), { port: 4000, explicitPort: false });
  assert.deepEqual(parseDevArgs(["--port", "4321"]), { port: 4321, explicitPort: true });
  assert.deepEqual(parseDevArgs(["--port=0"]), { port: 0, explicitPort: true });
  assert.throws(() => parseDevArgs(["--port"]), /--port expects a port number/);
  assert.throws(() => parseDevArgs(["--port", "70000"]), /--port expects a port number/);
  assert.throws(() => parseDevArgs(["--open"]), /unknown argument --open/);
});

test("Playground chat bodies are checked field by field", () => {
  const messages = [{ role: "user", content: "hi" }];
  assert.deepEqual(
    parseChatBody({ messages, baseModel: "svc/pico-llama", temperature: 0.5, topP: 0.9, maxTokens: 8 }),
    {
      messages,
      baseModel: "svc/pico-llama",
      temperature: 0.5,
      topP: 0.9,
      maxTokens: 8,
    },
  );
  assert.throws(() => parseChatBody({}), /^StudioError: messages: expected a non-empty array$/);
  assert.throws(() => parseChatBody({ messages: [{ role: "robot", content: "x" }] }), /messages\[0\]/);
  assert.throws(() => parseChatBody({ messages, maxTokens: "8" }), /maxTokens: expected a number/);
  assert.throws(() => parseChatBody({ messages, baseModel: 3 }), /baseModel: expected a string/);
});
