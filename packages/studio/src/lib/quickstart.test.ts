import assert from "node:assert/strict";
import { test } from "node:test";
import { clientBaseUrl, hostBaseUrl, QUICKSTART_OPERATIONS, quickstartSample } from "./quickstart.js";

const URL_ = "http://support-bot.localhost:4200/v1/chat/completions";
const keyed = { url: URL_, authMode: "fixed_api_key" as const, slug: "support-bot" };
const open = { ...keyed, authMode: "none" as const };

test("two operations: POST /v1/chat/completions and POST /v1/responses", () => {
  assert.deepEqual(
    QUICKSTART_OPERATIONS.map((o) => o.label),
    ["POST /v1/chat/completions", "POST /v1/responses"],
  );
});

test("POST /v1/responses: the same base URL and key, an input instead of messages", () => {
  const curl = quickstartSample("curl", keyed, "responses");
  assert.match(curl, /^curl http:\/\/support-bot\.localhost:4200\/v1\/responses \\/);
  assert.ok(curl.includes('-H "Authorization: Bearer YOUR_API_KEY"'));
  assert.ok(curl.includes('"input": "Hello!"'));
  const python = quickstartSample("python", open, "responses");
  assert.ok(python.includes('base_url="http://127.0.0.1:4200/d/support-bot/v1",'));
  assert.ok(python.includes("client.responses.create("));
  assert.ok(python.includes("print(response.output_text)"));
  const js = quickstartSample("javascript", keyed, "responses");
  assert.ok(js.includes("await client.responses.create({"));
  assert.ok(js.includes("console.log(response.output_text);"));
  assert.ok(!js.includes("messages"));
});

test("client base URL ends in /v1 (the library appends the route)", () => {
  assert.equal(hostBaseUrl(URL_), "http://support-bot.localhost:4200/v1");
  assert.equal(
    hostBaseUrl("https://support-bot.svc.example/v1/chat/completions"),
    "https://support-bot.svc.example/v1",
  );
  assert.equal(
    clientBaseUrl("https://support-bot.svc.example/v1/chat/completions", "support-bot"),
    "https://support-bot.svc.example/v1",
  );
  // *.localhost does not resolve through glibc: clients get the edge's path form.
  assert.equal(clientBaseUrl(URL_, "support-bot"), "http://127.0.0.1:4200/d/support-bot/v1");
});

test("cURL: full URL, bearer header only for fixed_api_key", () => {
  const withKey = quickstartSample("curl", keyed);
  assert.match(withKey, /^curl http:\/\/support-bot\.localhost:4200\/v1\/chat\/completions \\/);
  assert.ok(withKey.includes('-H "Authorization: Bearer YOUR_API_KEY"'));
  assert.ok(withKey.includes('"messages": [{ "role": "user", "content": "Hello!" }]'));
  const noKey = quickstartSample("curl", open);
  assert.ok(!noKey.includes("Authorization"));
  assert.ok(noKey.includes('-H "Content-Type: application/json"'));
});

test("Python client: base_url …/v1 and the key or a not-required placeholder", () => {
  const withKey = quickstartSample("python", keyed);
  assert.ok(withKey.includes('base_url="http://127.0.0.1:4200/d/support-bot/v1",'));
  assert.ok(withKey.includes('api_key="YOUR_API_KEY",'));
  assert.ok(!withKey.includes('/chat/completions"'));
  const noKey = quickstartSample("python", open);
  assert.ok(noKey.includes('api_key="not-required",'));
  assert.ok(!noKey.includes("YOUR_API_KEY"));
});

test('JavaScript client: baseURL …/v1 and apiKey: "YOUR_API_KEY" or a placeholder', () => {
  const withKey = quickstartSample("javascript", keyed);
  assert.ok(withKey.includes('baseURL: "http://127.0.0.1:4200/d/support-bot/v1",'));
  assert.ok(withKey.includes('apiKey: "YOUR_API_KEY",'));
  assert.ok(withKey.includes("client.chat.completions.create"));
  const noKey = quickstartSample("javascript", open);
  assert.ok(noKey.includes('apiKey: "not-required",'));
  assert.ok(!noKey.includes("YOUR_API_KEY"));
});
