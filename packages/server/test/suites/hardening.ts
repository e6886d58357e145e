// Probes of issue 14, findings 3, 4, 5, 6 and 10: NUL characters, files left
// by refused uploads and the startup sweep, numeric ranges (inference, edge,
// jobs, operator limits), and the smaller mismatches. Each fails if its hole
// comes back; the dataset URL probes are in hardening-ssrf.ts.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, it } from "node:test";
import OpenAI from "openai";
import {
  type Backend,
  call,
  chatJsonl,
  newIdentity,
  type ServerProcess,
  serverFor,
  startServerProcess,
  TINY_MODEL,
  uploadDataset,
} from "../harness.js";
import { uniqueSlug } from "./deployments.js";

type SuiteServer = Awaited<ReturnType<typeof serverFor>>;

const LIMITS = ["--max-job-steps", "50", "--max-batch-size", "8"];

const datasetFiles = (dataDir: string) =>
  readdirSync(join(dataDir, "datasets"))
    .filter((f) => !f.startsWith("."))
    .sort();

/** A deployment of the tiny base model that needs no key. */
async function openDeployment(api: string, token: string, scope: string) {
  const created = await call(api, "POST", `/v1/endpoints?${scope}`, {
    token,
    json: {
      slug: uniqueSlug("hard"),
      authMode: "none",
      target: { kind: "base_model", baseModel: TINY_MODEL },
    },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.deployment as { id: string; slug: string };
}

export function hardeningTests(backend: Backend, shared: () => SuiteServer) {
  // Its own server: small operator limits, and restarted by the sweep probe.
  let limited: SuiteServer;
  let current: ServerProcess;
  before(async () => {
    limited = await serverFor(backend, LIMITS);
    current = limited;
  });
  after(async () => {
    await current?.stop();
    await limited?.cleanup();
  });

  const api = () => shared().apiUrl;

  it("refuses NUL in names, labels, query parameters and paths with a 400 naming the field", async () => {
    const id = await newIdentity(api());
    const dataset = await uploadDataset(api(), id);
    const deployment = await openDeployment(api(), id.token, id.scope);
    const cases: [string, string, { json?: unknown; body?: string }, RegExp][] = [
      ["POST", "/v1/projects", { json: { orgSlug: id.orgSlug, slug: "nul", name: "a\u0000b" } }, /^"name" /],
      ["POST", `/v1/endpoints/${deployment.id}/keys`, { json: { label: "k\u0000" } }, /^"label" /],
      [
        "POST",
        `/v1/jobs?${id.scope}`,
        { json: { name: "\u0000", baseModel: TINY_MODEL, datasetId: dataset.id } },
        /^"name" /,
      ],
      [
        "POST",
        `/v1/datasets?${id.scope}&name=a%00.jsonl`,
        { body: chatJsonl(2) },
        /^"name" \(query parameter\)/,
      ],
      ["GET", `/v1/projects?orgSlug=%00`, {}, /^"orgSlug" \(query parameter\)/],
      [
        "GET",
        `/v1/datasets?orgSlug=${id.orgSlug}&projectSlug=de%00mo`,
        {},
        /^"projectSlug" \(query parameter\)/,
      ],
      ["GET", `/v1/jobs/${dataset.id}/artifacts/%00`, {}, /^"path" /],
    ];
    for (const [method, path, options, message] of cases) {
      const reply = await call(api(), method, path, { token: id.token, ...options });
      assert.equal(reply.status, 400, `${path}: ${JSON.stringify(reply.body)}`);
      assert.equal(reply.body.error.code, "invalid_request", path);
      assert.match(reply.body.error.message, message, path);
      assert.match(reply.body.error.message, /NUL/, path);
    }
    const keys = await call(api(), "GET", `/v1/endpoints/${deployment.id}/keys`, { token: id.token });
    assert.deepEqual(keys.body.keys, []);
    const jobs = await call(api(), "GET", `/v1/jobs?${id.scope}`, { token: id.token });
    assert.deepEqual(jobs.body.jobs, []);
    // The edge path, with no key and with one: OpenAI's error shape, 400.
    const headerSets: Record<string, string>[] = [{}, { authorization: "Bearer nope" }];
    for (const headers of headerSets) {
      const edge = await call(shared().edgeUrl, "POST", "/d/%00/v1/chat/completions", {
        json: { messages: [{ role: "user", content: "hi" }] },
        headers,
      });
      assert.equal(edge.status, 400, JSON.stringify(edge.body));
      assert.equal(edge.body.error.type, "invalid_request_error");
      assert.match(edge.body.error.message, /"path" must not contain NUL/);
    }
  });

  it("refused uploads leave no file in the data dir", async () => {
    const id = await newIdentity(api());
    const before = datasetFiles(shared().dataDir);
    const upload = (query: string, body: string | Buffer) =>
      call(api(), "POST", `/v1/datasets?${id.scope}${query}`, { token: id.token, body });
    assert.equal((await upload("", chatJsonl(2000))).status, 413);
    assert.equal((await upload("", `${chatJsonl(2)}{"messages":[]}\n`)).status, 400);
    assert.equal(
      (await upload("", Buffer.concat([Buffer.from(chatJsonl(1)), Buffer.from([0xff, 0x0a])]))).status,
      400,
    );
    assert.equal((await upload("&name=%00", chatJsonl(2))).status, 400);
    assert.equal((await upload(`&name=${"n".repeat(201)}`, chatJsonl(2))).status, 400);
    assert.deepEqual(datasetFiles(shared().dataDir), before);
  });

  it("sweeps orphaned dataset files at startup, keeping referenced, recent and job files", async () => {
    const id = await newIdentity(current.apiUrl);
    const kept = await uploadDataset(current.apiUrl, id, chatJsonl(3));
    await current.stop();
    const dir = limited.dataDir;
    const old = new Date(Date.now() - 2 * 3600_000);
    const plant = (path: string, age: Date | null) => {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), "orphan\n");
      if (age) utimesSync(join(dir, path), age, age);
    };
    plant("datasets/01900000-0000-7000-8000-000000000000.jsonl", old);
    plant("datasets/01900000-0000-7000-8000-000000000001.jsonl.tmp-abcdefgh", old);
    plant("datasets/01900000-0000-7000-8000-000000000002.jsonl", null); // an upload another process is committing
    plant("jobs/01900000-0000-7000-8000-000000000003/final/adapter_model.safetensors", old);
    current = await startServerProcess({ dataDir: dir, databaseUrl: limited.databaseUrl, args: LIMITS });
    assert.deepEqual(
      datasetFiles(dir),
      [`${kept.id}.jsonl`, "01900000-0000-7000-8000-000000000002.jsonl"].sort(),
    );
    assert.equal(readFileSync(join(dir, "datasets", `${kept.id}.jsonl`), "utf8"), chatJsonl(3));
    assert.deepEqual(readdirSync(join(dir, "jobs/01900000-0000-7000-8000-000000000003/final")), [
      "adapter_model.safetensors",
    ]);
    const got = await call(current.apiUrl, "GET", `/v1/datasets/${kept.id}`, { token: id.token });
    assert.equal(got.status, 200);

    // A data dir recorded for another database is not swept: its files are that database's.
    await current.stop();
    writeFileSync(join(dir, "datasets/.database"), "postgres://elsewhere/other\n");
    plant("datasets/01900000-0000-7000-8000-000000000004.jsonl", old);
    current = await startServerProcess({ dataDir: dir, databaseUrl: limited.databaseUrl, args: LIMITS });
    assert.ok(datasetFiles(dir).includes("01900000-0000-7000-8000-000000000004.jsonl"));
    assert.match(current.output(), /not sweeping .*another database/);
  });

  it("refuses out-of-range numbers on inference and the edge with a 400 naming the field", async () => {
    const id = await newIdentity(api());
    const messages = [{ role: "user", content: "hi" }];
    const cases: [Record<string, unknown>, string][] = [
      [{ seed: 1e308 }, "seed"],
      [{ seed: -1 }, "seed"],
      [{ seed: 2 ** 32 }, "seed"],
      [{ seed: 1.5 }, "seed"],
      [{ temperature: 1e308 }, "temperature"],
      [{ topP: 2 }, "topP"],
      [{ adapter: { kind: "checkpoint", jobId: id.projectId, step: 1e300 } }, "adapter.step"],
    ];
    for (const [extra, field] of cases) {
      const body = { messages, ...(extra.adapter ? {} : { baseModel: TINY_MODEL }), ...extra };
      const reply = await call(api(), "POST", "/v1/inference/chat", { token: id.token, json: body });
      assert.equal(reply.status, 400, `${JSON.stringify(extra)}: ${JSON.stringify(reply.body)}`);
      assert.match(reply.body.error.message, new RegExp(`^"${field}" `));
    }
    const deployment = await openDeployment(api(), id.token, id.scope);
    const client = new OpenAI({
      apiKey: "none",
      baseURL: `${shared().edgeUrl}/d/${deployment.slug}/v1`,
      maxRetries: 0,
    });
    for (const [extra, field] of [
      [{ seed: 1e308 }, "seed"],
      [{ seed: -5 }, "seed"],
      [{ temperature: 1e308 }, "temperature"],
    ] as const) {
      await assert.rejects(
        client.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }], ...extra }),
        (error: unknown) =>
          error instanceof OpenAI.BadRequestError && new RegExp(`"${field}" `).test(error.message),
      );
    }
  });

  it("bounds every job hyperparameter, under the operator's limits, and creates nothing out of range", async () => {
    for (const [server, maxSteps, batchSize] of [
      [shared(), 100_000, 256],
      [limited, 50, 8],
    ] as const) {
      const apiUrl = server === limited ? current.apiUrl : server.apiUrl;
      const id = await newIdentity(apiUrl);
      const dataset = await uploadDataset(apiUrl, id);
      const create = (hyperparameters: Record<string, unknown>) =>
        call(apiUrl, "POST", `/v1/jobs?${id.scope}`, {
          token: id.token,
          json: { name: "n", baseModel: TINY_MODEL, datasetId: dataset.id, dryRun: true, hyperparameters },
        });
      const lora = { r: 4, alpha: 8 };
      const cases: [Record<string, unknown>, string, RegExp][] = [
        [{ maxSteps: 1e12 }, "maxSteps", new RegExp(`at most ${maxSteps}$`)],
        [{ maxSteps: maxSteps + 1 }, "maxSteps", new RegExp(`at most ${maxSteps}$`)],
        [{ batchSize: 1e9 }, "batchSize", new RegExp(`at most ${batchSize}$`)],
        [{ batchSize: batchSize + 1 }, "batchSize", new RegExp(`at most ${batchSize}$`)],
        [{ warmupSteps: 1e12 }, "warmupSteps", /at most/],
        [{ evalSteps: 1e12 }, "evalSteps", /at most/],
        [{ saveSteps: maxSteps + 1 }, "saveSteps", /at most/],
        [{ numTrainEpochs: 1e308 }, "numTrainEpochs", /at most 1000/],
        [{ learningRate: 1e308 }, "learningRate", /at most 1/],
        [{ weightDecay: 2 }, "weightDecay", /at most 1/],
        [{ gradientAccumulationSteps: 1e9 }, "gradientAccumulationSteps", /at most 1024/],
        [{ seed: 1e308 }, "seed", /must be an integer|at most/],
        [{ lora: { r: 4, alpha: 1e308 } }, "lora.alpha", /at most/],
        [{ lora: { ...lora, maxLength: 1e9 } }, "lora.maxLength", /at most/],
        [{ lora: { r: 1e9, alpha: 8 } }, "lora.r", /at most 1024/],
      ];
      // Without maxSteps, epochs over the dataset decide the length: 13 epochs of ceil(16 / 4) = 52 steps.
      if (maxSteps === 50)
        cases.push([
          { numTrainEpochs: 13, batchSize: 4 },
          "numTrainEpochs",
          /makes this job train 52 steps over the dataset's 16 rows; this server allows at most 50 /,
        ]);
      for (const [hyperparameters, field, message] of cases) {
        const reply = await create({ lora, ...hyperparameters });
        assert.equal(reply.status, 400, `${JSON.stringify(hyperparameters)}: ${JSON.stringify(reply.body)}`);
        assert.match(reply.body.error.message, new RegExp(`^"hyperparameters\\.${field}" `));
        assert.match(reply.body.error.message, message);
      }
      const jobs = await call(apiUrl, "GET", `/v1/jobs?${id.scope}`, { token: id.token });
      assert.deepEqual(jobs.body.jobs, []);
      const atLimit = await create({ lora, maxSteps, batchSize: Math.min(batchSize, 8) });
      assert.equal(atLimit.status, 201, JSON.stringify(atLimit.body));
      if (maxSteps === 50) {
        const epochsAtLimit = await create({ lora, numTrainEpochs: 12, batchSize: 4 }); // 48 steps
        assert.equal(epochsAtLimit.status, 201, JSON.stringify(epochsAtLimit.body));
      }
      for (const lastEventId of ["1e300", "2147483648"]) {
        const events = await call(
          apiUrl,
          "GET",
          `/v1/jobs/${atLimit.body.job.id}/events?lastEventId=${lastEventId}`,
          {
            token: id.token,
          },
        );
        assert.equal(events.status, 400, lastEventId);
        assert.match(events.body.error.message, /"Last-Event-ID" must be an event id/);
      }
    }
  });

  it("applies the documented lora default, counts label characters in code points and names bad UTF-8", async () => {
    const id = await newIdentity(api());
    const dataset = await uploadDataset(api(), id);
    const job = await call(api(), "POST", `/v1/jobs?${id.scope}`, {
      token: id.token,
      json: {
        name: "no lora",
        baseModel: TINY_MODEL,
        datasetId: dataset.id,
        dryRun: true,
        hyperparameters: { maxSteps: 1 },
      },
    });
    assert.equal(job.status, 201, JSON.stringify(job.body));
    assert.deepEqual(job.body.job.hyperparameters, { lora: { r: 8, alpha: 16 }, maxSteps: 1 });

    const deployment = await openDeployment(api(), id.token, id.scope);
    const issue = (label: string) =>
      call(api(), "POST", `/v1/endpoints/${deployment.id}/keys`, { token: id.token, json: { label } });
    assert.equal((await issue("😀".repeat(41))).status, 201);
    const full = await issue("😀".repeat(80));
    assert.equal(full.status, 201);
    assert.equal(full.body.key.label, "😀".repeat(80));
    const over = await issue("😀".repeat(81));
    assert.equal(over.status, 400);
    assert.match(over.body.error.message, /"label" must be at most 80 characters/);

    const badJson = Buffer.concat([
      Buffer.from('{"orgSlug":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('","slug":"x1"}'),
    ]);
    const headers = { "content-type": "application/json" };
    const reply = await call(api(), "POST", "/v1/projects", { token: id.token, body: badJson, headers });
    assert.equal(reply.status, 400);
    assert.deepEqual(reply.body.error, {
      message: "request body is not valid UTF-8 text",
      code: "invalid_json",
    });
    const edge = await call(shared().edgeUrl, "POST", `/d/${deployment.slug}/v1/chat/completions`, {
      body: badJson,
      headers,
    });
    assert.equal(edge.status, 400);
    assert.equal(edge.body.error.message, "request body is not valid UTF-8 text");
    const upload = await call(api(), "POST", `/v1/datasets?${id.scope}&name=latin1.jsonl`, {
      token: id.token,
      body: Buffer.concat([Buffer.from(chatJsonl(2)), Buffer.from('{"messages":"caf\xe9"}\n', "latin1")]),
    });
    assert.equal(upload.status, 400);
    assert.equal(upload.body.error.message, "latin1.jsonl line 3: not valid UTF-8 text");
  });
}
