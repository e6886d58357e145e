import assert from "node:assert/strict";
import { it } from "node:test";
import { parseUpstreams, UpstreamRegistry, upstreamKeyVariable } from "./upstreams.js";

it("parses name=url specs, trims a trailing slash and takes each key from its variable", () => {
  const env = { SVC_UPSTREAM_KEY_VLLM_A100: "secret" };
  const parsed = parseUpstreams(
    ["vllm-a100=http://10.0.0.5:8000/v1/", "llama=https://llama.internal/v1"],
    env,
  );
  assert.deepEqual(parsed, [
    { name: "vllm-a100", baseUrl: "http://10.0.0.5:8000/v1", apiKey: "secret" },
    { name: "llama", baseUrl: "https://llama.internal/v1", apiKey: null },
  ]);
  assert.equal(upstreamKeyVariable("vllm-a100"), "SVC_UPSTREAM_KEY_VLLM_A100");
  assert.deepEqual(new UpstreamRegistry(parsed).names(), ["llama", "vllm-a100"]);
});

it("names the bad spec in its error", () => {
  assert.throws(() => parseUpstreams(["=http://x/v1"]), /--upstream must be <name>=<base url>.*=http/);
  assert.throws(() => parseUpstreams(["UPPER=http://x/v1"]), /a-z, 0-9/);
  assert.throws(() => parseUpstreams(["x=not a url"]), /--upstream x: "not a url" is not a URL/);
  assert.throws(() => parseUpstreams(["x=file:///etc/passwd"]), /http or https/);
  assert.throws(() => parseUpstreams(["x=http://a/v1", "x=http://b/v1"]), /given twice/);
});
