// The chat parameter parser alone: each dialect's names, what null means,
// the cross-field rules, and docs/api.md listing every parameter.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { ApiError } from "../http/api-error.js";
import { chatParameterNames, parseChatRequest, refusedParam } from "./chat-params.js";

const messages = [{ role: "user", content: "hi" }];
const API_DOCS = new URL("../../../../../docs/api.md", import.meta.url);

async function refusal(body: unknown, dialect: "openai" | "svc" = "openai"): Promise<ApiError> {
  const error = await parseChatRequest(body, dialect).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiError, `expected a refusal of ${JSON.stringify(body)}`);
  return error;
}

describe("chat parameters", () => {
  it("reads OpenAI's names at the edge and svc's camelCase names on the cloud API, into one generation", async () => {
    const edge = await parseChatRequest(
      {
        messages,
        top_p: 0.5,
        max_completion_tokens: 7,
        n: 3,
        logprobs: true,
        top_logprobs: 4,
        frequency_penalty: 1,
        presence_penalty: -1,
        logit_bias: { "12": -5 },
        stream: true,
        stream_options: { include_usage: true },
        user: "u",
        metadata: { a: "b" },
        store: false,
      },
      "openai",
    );
    const cloud = await parseChatRequest(
      {
        messages,
        topP: 0.5,
        maxTokens: 7,
        n: 3,
        logprobs: true,
        topLogprobs: 4,
        frequencyPenalty: 1,
        presencePenalty: -1,
        logitBias: { "12": -5 },
        stream: true,
      },
      "svc",
    );
    for (const { params } of [edge, cloud]) {
      assert.equal(params.topP, 0.5);
      assert.equal(params.maxTokens, 7);
      assert.equal(params.n, 3);
      assert.equal(params.logprobs, 4);
      assert.equal(params.frequencyPenalty, 1);
      assert.equal(params.presencePenalty, -1);
      assert.deepEqual(params.logitBias, { "12": -5 });
    }
    assert.equal(edge.params.streamUsage, "own_chunk");
    assert.equal(edge.params.maxTokensPolicy, "refuse");
    assert.equal(cloud.params.streamUsage, "last_chunk");
    assert.equal(cloud.params.logitBiasField, "logitBias");
    const plain = await parseChatRequest({ messages, logprobs: true, n: null, stream: true }, "openai");
    assert.equal(plain.params.logprobs, 0, "logprobs without top_logprobs: no alternatives");
    assert.equal(plain.params.n, 1, "null is absent");
    assert.equal(plain.params.streamUsage, "none");
  });

  it("refuses conflicts and parameters no text model honours, naming the parameter", async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ max_tokens: 3, max_completion_tokens: 4 }, "max_completion_tokens", "invalid_request"],
      [{ top_logprobs: 3 }, "top_logprobs", "invalid_request"],
      [{ stream_options: { include_usage: true } }, "stream_options", "invalid_request"],
      [
        { stream: true, stream_options: { include_usage: 1 } },
        "stream_options.include_usage",
        "invalid_request",
      ],
      [{ modalities: ["text", "audio"] }, "modalities", "unsupported_parameter"],
      [{ audio: {} }, "audio", "unsupported_parameter"],
      [{ store: true }, "store", "unsupported_parameter"],
      [{ service_tier: "priority" }, "service_tier", "unsupported_parameter"],
      [{ logit_bias: { "1.5": 1 } }, "logit_bias", "invalid_request"],
      [{ logit_bias: { "7": -101 } }, "logit_bias.7", "invalid_request"],
      [
        { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) },
        "metadata",
        "invalid_request",
      ],
      [{ whatever: true }, "whatever", "invalid_request"],
    ];
    for (const [extra, param, code] of cases) {
      const error = await refusal({ messages, ...extra });
      assert.equal(error.status, 400);
      assert.equal(refusedParam(error), param, error.message);
      assert.equal(error.code, code, error.message);
    }
    // the same names mean nothing to the cloud API: unknown there
    const cloud = await refusal({ messages, max_tokens: 3 }, "svc");
    assert.match(cloud.message, /^"max_tokens" is not a known field/);
    // a 400 that names no request field has no param
    assert.equal(refusedParam(new ApiError(400, "x", '"target.baseModel": gone')), null);
    assert.equal(refusedParam(new ApiError(404, "x", '"n" whatever')), null);
  });

  it("docs/api.md lists every parameter of the edge", () => {
    const docs = readFileSync(API_DOCS, "utf8");
    const section = docs.slice(docs.indexOf("### Chat parameters"), docs.indexOf("#### Logprobs"));
    const rows = section.split("\n").filter((line) => line.startsWith("| `"));
    const listed = new Set(
      rows.flatMap((row) => [...row.split("|")[1].matchAll(/`([a-z_]+)`/g)].map((m) => m[1])),
    );
    for (const name of chatParameterNames("openai")) assert.ok(listed.has(name), `${name} is in the table`);
    for (const name of listed)
      assert.ok(chatParameterNames("openai").includes(name), `${name} is a parameter`);
  });
});
