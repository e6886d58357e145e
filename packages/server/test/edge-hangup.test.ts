// A streaming client that hangs up at the edge leaves the batch at once,
// through a real `svc server`: its generation stops within one decode step of
// the hang-up, which the tokens its API key is billed for show (key usage,
// GET /v1/endpoints/:id/keys), since the edge meters what was generated;
// on chat completions and on the Responses API alike.
//
// The model is random, with an output head that can only pick printable ASCII
// characters, each one token (the test tokenizer's byte tokens; no
// end-of-sequence, so greedy decoding runs to max_tokens): the client counts
// the tokens it received by counting characters. The model is large enough,
// and served in fp32, that a decode step (about 32 ms here) stays longer than
// a token takes from the inference process through the server to the client
// and an abort takes back, even while other suites load the machine: with
// 12-19 ms steps a loaded CI run once saw 4 steps pass before the abort.
import assert from "node:assert/strict";
import { closeSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createRandomModel } from "@svc/engine/testing";
import { call, type Identity, newIdentity, serverFor, tempDir, until } from "./harness.js";

const MODEL = "test/ascii";
const MAX_TOKENS = 100;
/** The client hangs up once it has this many tokens. */
const HANG_UP_AT = 20;

/** Zeroes lm_head's rows of every token but the 94 printable ASCII characters: those then always win. */
function onlyPrintableAscii(dir: string): void {
  const vocab = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")).model.vocab as Record<
    string,
    number
  >;
  const allowed = new Set(
    Object.entries(vocab)
      .filter(([token]) => /^[!-~]$/.test(token))
      .map(([, id]) => id),
  );
  assert.equal(allowed.size, 94);
  const file = join(dir, "model.safetensors");
  const fd = openSync(file, "r+");
  try {
    const size = Buffer.alloc(8);
    readSync(fd, size, 0, 8, 0);
    const headerBytes = Number(size.readBigUInt64LE());
    const header = Buffer.alloc(headerBytes);
    readSync(fd, header, 0, headerBytes, 8);
    const head = JSON.parse(header.toString("utf8"))["lm_head.weight"] as {
      dtype: string;
      shape: [number, number];
      data_offsets: [number, number];
    };
    assert.equal(head.dtype, "F32");
    const [rows, cols] = head.shape;
    const zeros = Buffer.alloc(cols * 4);
    for (let id = 0; id < rows; id++)
      if (!allowed.has(id))
        writeSync(fd, zeros, 0, zeros.length, 8 + headerBytes + head.data_offsets[0] + id * cols * 4);
  } finally {
    closeSync(fd);
  }
}

interface Streamed {
  /** Tokens received (characters of content). */
  tokens: number;
  text: string;
  finishReason: string | null;
  elapsedMs: number;
}

/** What one SSE event adds: chat.completion.chunk deltas, or the Responses API's output_text deltas. */
function readEvent(event: string, out: Streamed): void {
  const payload = /^data: (.*)$/m.exec(event)?.[1] ?? "";
  if (payload === "[DONE]" || payload === "") return;
  const data = JSON.parse(payload);
  if (data.object === "chat.completion.chunk") {
    const choice = data.choices[0];
    out.text += choice.delta.content ?? "";
    out.finishReason = choice.finish_reason ?? out.finishReason;
  } else if (data.type === "response.output_text.delta") out.text += data.delta;
  else if (data.type === "response.incomplete") out.finishReason = "length";
}

/** Streams a chat (or a response) from the edge; with `hangUpAt`, destroys the connection as soon as that many tokens arrived. */
function stream(url: string, apiKey: string, hangUpAt?: number): Promise<Streamed> {
  const responses = url.endsWith("/responses");
  const body = JSON.stringify({
    model: "x",
    ...(responses
      ? { input: "Write.", max_output_tokens: MAX_TOKENS }
      : { messages: [{ role: "user", content: "Write." }], max_tokens: MAX_TOKENS }),
    temperature: 0,
    stream: true,
  });
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const out: Streamed = { tokens: 0, text: "", finishReason: null, elapsedMs: 0 };
    const done = () => resolve({ ...out, elapsedMs: performance.now() - started });
    const req = request(
      url,
      { method: "POST", headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" } },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
        let pending = "";
        res.setEncoding("utf8");
        res.on("data", (data: string) => {
          pending += data;
          const events = pending.split("\n\n");
          pending = events.pop() ?? "";
          for (const event of events) readEvent(event, out);
          out.tokens = out.text.length;
          if (hangUpAt !== undefined && out.tokens >= hangUpAt) {
            req.destroy();
            done();
          }
        });
        res.on("end", done);
        res.on("error", () => {});
      },
    );
    req.on("error", (error) => {
      if (!req.destroyed || hangUpAt === undefined) reject(error);
    });
    req.end(body);
  });
}

describe("a streaming client that hangs up at the edge", () => {
  let server: Awaited<ReturnType<typeof serverFor>>;
  let id: Identity;
  let deploymentId: string;
  let url: string;
  let responsesUrl: string;
  const newKey = async () =>
    (
      await call(server.apiUrl, "POST", `/v1/endpoints/${deploymentId}/keys`, {
        token: id.token,
        json: { label: "k" },
      })
    ).body.key as { id: string; plaintext: string };
  /** The completion tokens billed to `keyId`, once its request is metered. */
  const billed = (keyId: string) =>
    until(`usage of key ${keyId}`, async () => {
      const listed = await call(server.apiUrl, "GET", `/v1/endpoints/${deploymentId}/keys`, {
        token: id.token,
      });
      const key = (listed.body.keys as { id: string; usage: { completionTokens: number } }[]).find(
        (k) => k.id === keyId,
      );
      return key && key.usage.completionTokens > 0 ? key.usage.completionTokens : null;
    });

  before(async () => {
    const dir = join(tempDir("ascii-model"), "ascii");
    await createRandomModel(dir, {
      hiddenSize: 1024,
      intermediateSize: 3072,
      numHiddenLayers: 12,
      tieWordEmbeddings: false,
      seed: 7,
    });
    onlyPrintableAscii(dir);
    server = await serverFor("sqlite", ["--model", `${MODEL}=${dir}`]);
    id = await newIdentity(server.apiUrl);
    const created = await call(server.apiUrl, "POST", `/v1/endpoints?${id.scope}`, {
      token: id.token,
      json: {
        slug: `hangup-${process.pid}`,
        target: { kind: "base_model", baseModel: MODEL },
        // fp32 weights: the step is then the model's own compute, not per-token overhead.
        weightFormat: "fp32",
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    deploymentId = created.body.deployment.id;
    url = `${server.edgeUrl}/d/${created.body.deployment.slug}/v1/chat/completions`;
    responsesUrl = `${server.edgeUrl}/d/${created.body.deployment.slug}/v1/responses`;
  });
  after(() => server?.cleanup());

  it("leaves the batch within one decode step: it is billed at most 2 tokens past those it received", async (t) => {
    // The same request read to its end runs all max_tokens steps, one character each.
    const whole = await newKey();
    const full = await stream(url, whole.plaintext);
    assert.equal(full.finishReason, "length");
    assert.equal(full.tokens, MAX_TOKENS, JSON.stringify(full.text));
    assert.match(full.text, /^[!-~]+$/);
    assert.equal(await billed(whole.id), MAX_TOKENS);
    const stepMs = full.elapsedMs / MAX_TOKENS;

    const hungUp = await newKey();
    const partial = await stream(url, hungUp.plaintext, HANG_UP_AT);
    assert.ok(partial.tokens >= HANG_UP_AT && partial.tokens < MAX_TOKENS);
    assert.equal(partial.text, full.text.slice(0, partial.tokens), "greedy: the same tokens");
    const generated = await billed(hungUp.id);
    t.diagnostic(
      `received ${partial.tokens} tokens, then hung up; ${generated} generated (a step ~${stepMs.toFixed(1)} ms)`,
    );
    // One step may be running when the hang-up arrives, and one token may be on its way to the client.
    assert.ok(
      generated >= partial.tokens && generated <= partial.tokens + 2,
      `${generated} tokens generated for a client that hung up after ${partial.tokens}`,
    );
  });

  it("a Responses API stream leaves the batch the same way: billed at most 2 tokens past those received", async (t) => {
    const whole = await newKey();
    const full = await stream(responsesUrl, whole.plaintext);
    assert.equal(full.finishReason, "length");
    assert.equal(full.tokens, MAX_TOKENS);
    assert.equal(await billed(whole.id), MAX_TOKENS);
    const hungUp = await newKey();
    const partial = await stream(responsesUrl, hungUp.plaintext, HANG_UP_AT);
    assert.ok(partial.tokens >= HANG_UP_AT && partial.tokens < MAX_TOKENS);
    assert.equal(partial.text, full.text.slice(0, partial.tokens), "greedy: the same tokens");
    const generated = await billed(hungUp.id);
    t.diagnostic(
      `received ${partial.tokens} tokens, then hung up; ${generated} generated (a step ~${(full.elapsedMs / MAX_TOKENS).toFixed(1)} ms)`,
    );
    assert.ok(
      generated >= partial.tokens && generated <= partial.tokens + 2,
      `${generated} tokens generated for a client that hung up after ${partial.tokens}`,
    );
  });
});
