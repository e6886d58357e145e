import assert from "node:assert/strict";
import { it } from "node:test";
import { HubModelPolicy } from "./hub-policy.js";

it("matches org/name globs without regard to case; * stays within one part", () => {
  const policy = HubModelPolicy.parse("Qwen/*, HuggingFaceTB/SmolLM2-*");
  assert.ok(policy.allowsDownload("Qwen/Qwen3-0.6B"));
  assert.ok(policy.allowsDownload("qwen/qwen2.5-0.5b-instruct"));
  assert.ok(policy.allowsDownload("HuggingFaceTB/SmolLM2-135M"));
  assert.ok(!policy.allowsDownload("HuggingFaceTB/SmolLM3-3B"));
  assert.ok(!policy.allowsDownload("meta-llama/Llama-3.2-1B"));
  assert.ok(!policy.allowsDownload("QwenX/Qwen3"));
  assert.ok(!policy.allowsCached);
  assert.equal(policy.describe(), "svc server --hub-models Qwen/*,HuggingFaceTB/SmolLM2-*");
});

it("defaults to cached models only; * and */* allow every model; none allows none", () => {
  const byDefault = new HubModelPolicy();
  assert.ok(byDefault.allowsCached);
  assert.ok(!byDefault.allowsDownload("Qwen/Qwen3-0.6B"));
  assert.ok(HubModelPolicy.parse("*").allowsDownload("any/model"));
  assert.ok(HubModelPolicy.parse("*/*,cached").allowsUse("any/model"));
  const none = HubModelPolicy.parse("none");
  assert.ok(!none.allowsUse("Qwen/Qwen3-0.6B"));
});

it("refuses entries that are not patterns, naming them", () => {
  assert.throws(() => HubModelPolicy.parse("Qwen"), /--hub-models: "Qwen" is not an <org>\/<name> pattern/);
  assert.throws(() => HubModelPolicy.parse("Qwen/[a-z]"), /"Qwen\/\[a-z\]" is not an <org>\/<name> pattern/);
  assert.throws(() => HubModelPolicy.parse("none,Qwen/*"), /"none" cannot be listed with other patterns/);
  assert.throws(() => HubModelPolicy.parse(" , "), /give patterns/);
});
