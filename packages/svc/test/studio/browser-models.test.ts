// Studio's base-model pickers and download progress in Chromium against a real
// `svc dev` and `svc server` whose Hugging Face cache holds one Hub model and
// whose Hub (the loopback test Hub) serves another: the endpoint form and the
// Playground list GET /v1/models with family, size, context and a cached badge,
// a Hub id can be typed, a job on the uncached Hub model shows its download on
// the job page, and the Playground's picker downloads a typed Hub model with a
// progress bar, after which it is listed as cached and answers.
import assert from "node:assert/strict";
import { cp, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createTestModel, REPO_ROOT, startTestServer, TEST_MODEL } from "../cli/harness.js";
import { chromiumMissing, maybeScreenshot, studioInBrowser, TEST_MODEL_TRAINER, until } from "./browser.js";

/** The server package's loopback test Hub (packages/server/test/hub-server.ts), as far as this test uses it. */
interface TestHub {
  url: string;
  addRepo(options: { kind: "model" | "dataset"; repo: string; dir: string }): string;
  chunkDelayMs: number;
  close(): Promise<void>;
}

async function startTestHub(): Promise<TestHub> {
  const url = join(REPO_ROOT, "packages", "server", "dist", "test", "hub-server.js");
  const { TestHub } = (await import(url)) as { TestHub: { start(): Promise<TestHub> } };
  return TestHub.start();
}

const CACHED = "org/cached-tiny";
const REMOTE = "org/remote-tiny";
const PULLED = "org/remote-pulled";
const FORM_PULLED = "org/remote-for-endpoint";
const CACHED_SHA = "c0ffee".padEnd(40, "0");
const TRAIN_ONLY = "org/neox-tiny";

/**
 * A GPT-NeoX folder: an architecture svc's engine does not implement, so the
 * server lists it as train-only (torch backend with transformers). Zeros will
 * do: nothing here computes with it.
 */
async function writeTrainOnlyModel(dir: string, tokenizerFrom: string): Promise<string> {
  const out = join(dir, "neox-tiny");
  await mkdir(out, { recursive: true });
  await writeFile(
    join(out, "config.json"),
    JSON.stringify({
      architectures: ["GPTNeoXForCausalLM"],
      model_type: "gpt_neox",
      max_position_embeddings: 64,
    }),
  );
  await cp(join(tokenizerFrom, "tokenizer.json"), join(out, "tokenizer.json"));
  const shapes: [string, number[]][] = [
    ["gpt_neox.embed_in.weight", [16, 8]],
    ["gpt_neox.layers.0.attention.query_key_value.weight", [24, 8]],
    ["gpt_neox.layers.0.attention.dense.weight", [8, 8]],
    ["embed_out.weight", [16, 8]],
  ];
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, [rows, cols]] of shapes) {
    header[name] = { dtype: "F32", shape: [rows, cols], data_offsets: [offset, offset + rows * cols * 4] };
    offset += rows * cols * 4;
  }
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  await writeFile(join(out, "model.safetensors"), Buffer.concat([length, json, Buffer.alloc(offset)]));
  return out;
}

/** A model folder laid out in the HF cache as huggingface_hub leaves it: snapshots/<sha>/ and refs/main. */
async function cacheModel(hfHome: string, repo: string, sha: string, dir: string): Promise<void> {
  const root = join(hfHome, "hub", `models--${repo.replace("/", "--")}`);
  await cp(dir, join(root, "snapshots", sha), { recursive: true });
  await mkdir(join(root, "refs"), { recursive: true });
  await writeFile(join(root, "refs", "main"), sha);
}

describe("Studio: base-model pickers and Hub download progress", {
  skip: chromiumMissing,
  timeout: 300_000,
}, () => {
  let hub: TestHub;
  let firstJobId = "";
  const session = studioInBrowser({
    homePrefix: "studio-models-home",
    project: { source: TEST_MODEL_TRAINER.replace("maxSteps: 12", "maxSteps: 2") },
    async startServer(home) {
      const tiny = await createTestModel();
      const hfHome = join(home, "hf");
      await cacheModel(hfHome, CACHED, CACHED_SHA, tiny);
      hub = await startTestHub();
      hub.addRepo({ kind: "model", repo: REMOTE, dir: tiny });
      hub.addRepo({ kind: "model", repo: PULLED, dir: tiny });
      hub.addRepo({ kind: "model", repo: FORM_PULLED, dir: tiny });
      const trainOnly = await writeTrainOnlyModel(home, tiny);
      return startTestServer({
        home,
        args: [
          "--bundled-models",
          "none",
          "--model",
          `${TEST_MODEL}=${tiny}`,
          "--model",
          `${TRAIN_ONLY}=${trainOnly}`,
          "--hub-models",
          "org/remote-*,cached",
        ],
        env: { HF_HOME: hfHome, HF_ENDPOINT: hub.url },
      });
    },
    async beforeStudio(s) {
      firstJobId = await s.submitJob();
    },
  });
  // After the session's own hooks: the server stops before its Hub.
  after(async () => {
    await hub?.close();
  });

  /** The endpoint form, opened for a base-model endpoint named slug. */
  const newBaseModelEndpoint = async (slug: string) => {
    const page = await session.open("endpoints");
    await page.getByTestId("new-endpoint").click();
    await page.getByTestId("create-slug").fill(slug);
    await page.getByTestId("target-kind").selectOption("base_model");
    return page;
  };

  test("endpoint form: the picker lists the server's models with their facts and badges; one is picked, a Hub id typed", async () => {
    const page = await newBaseModelEndpoint("cached-base");
    const options = page.getByTestId("target-base-options");
    const cached = options.locator(`button[data-model="${CACHED}"]`);
    await cached.waitFor();
    assert.equal(await cached.getByTestId("model-badge").textContent(), "cached");
    assert.match((await cached.getByTestId("model-badge").getAttribute("title")) ?? "", /at c0ffee000000/);
    assert.match(
      (await cached.locator(".model-option-facts").textContent()) ?? "",
      /^llama · [\d.]+K? params · [\d,]+ ctx$/,
    );
    const local = options.locator(`button[data-model="${TEST_MODEL}"]`);
    assert.equal(await local.getByTestId("model-badge").textContent(), "local");

    // Typing narrows the list; a Hub id the server does not list yet is accepted with a hint.
    const field = page.getByTestId("target-base");
    await field.fill("org/cach");
    assert.equal(await options.locator("button").count(), 1);
    await field.fill("someorg/some-model");
    assert.match(
      (await page.getByTestId("target-base-hint").textContent()) ?? "",
      /Download fetches it from the Hugging Face Hub/,
    );
    await field.fill("");
    await cached.click();
    assert.equal(await field.inputValue(), CACHED);
    assert.equal(await cached.getAttribute("aria-pressed"), "true");
    await maybeScreenshot(page, "endpoint-model-picker");
    await page.getByTestId("create-submit").click();
    await page.getByTestId("endpoint-list").getByText(`Base model: ${CACHED}`).waitFor();
  });

  test("pickers: a model svc's engine does not implement is listed as train only and cannot be picked to serve", async () => {
    const page = await newBaseModelEndpoint("train-only-base");
    const option = page.getByTestId("target-base-options").locator(`button[data-model="${TRAIN_ONLY}"]`);
    await option.waitFor();
    assert.equal(await option.isDisabled(), true);
    assert.equal(await option.getByTestId("model-badge").textContent(), "train only");
    assert.match((await option.getAttribute("title")) ?? "", /does not implement GPTNeoXForCausalLM/);
    // Typed by hand, it is named as train-only rather than offered for download.
    await page.getByTestId("target-base").fill(TRAIN_ONLY);
    assert.match(
      (await page.getByTestId("target-base-hint").textContent()) ?? "",
      /cannot serve this model; it trains on the PyTorch backend/,
    );
    assert.equal(await page.getByTestId("target-base-download").count(), 0);

    const playground = await session.open("playground");
    const select = playground.getByTestId("pg-model");
    const entry = select.locator(`option[value="base:${TRAIN_ONLY}"]`);
    await until("the train-only option", async () => (await entry.count()) === 1);
    assert.equal(await entry.isDisabled(), true);
    assert.match((await entry.textContent()) ?? "", /\(train only\)$/);
  });

  test("Playground: a Hub model picked in the picker answers", async () => {
    const page = await session.open("playground");
    const model = page.getByTestId("pg-model");
    await until("model options", async () => (await model.locator("option").count()) >= 3);
    await model.selectOption("base-other");
    const pick = page.getByTestId("pg-base-options").locator(`button[data-model="${CACHED}"]`);
    assert.equal(await pick.getByTestId("model-badge").textContent(), "cached");
    await pick.click();
    assert.equal(await model.inputValue(), `base:${CACHED}`);
    assert.equal(await page.getByTestId("pg-base").inputValue(), CACHED);
    const sent: { baseModel?: string }[] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/api/inference/chat")) sent.push(r.postDataJSON());
    });
    const answered = page.waitForResponse((r) => r.url().endsWith("/api/inference/chat"));
    await page.getByTestId("pg-input").fill("hello");
    await page.getByTestId("pg-send").click();
    const response = await answered;
    assert.equal(response.status(), 200, await response.text());
    await response.finished();
    assert.equal(sent[0]?.baseModel, CACHED);
    await maybeScreenshot(page, "playground-model-picker");
  });

  test("job detail: a job on an uncached Hub model shows its download per file, then training", async () => {
    // The job is submitted through the cloud API with the project's credentials, as the SDK would.
    const { token } = JSON.parse(await readFile(join(session.home, ".svc", "credentials.json"), "utf8"));
    const state = JSON.parse(await readFile(join(session.projectDir, ".svc", "state.json"), "utf8"));
    const scope = `orgSlug=${state.orgSlug}&projectSlug=${state.projectSlug}`;
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const first = (await (
      await fetch(`${session.server.apiUrl}/v1/jobs/${firstJobId}`, { headers })
    ).json()) as {
      job: { datasetId: string };
    };
    const created = await fetch(`${session.server.apiUrl}/v1/jobs?${scope}`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        name: "remote-base",
        baseModel: REMOTE,
        datasetId: first.job.datasetId,
        hyperparameters: { lora: { r: 4, alpha: 8 }, maxSteps: 2, batchSize: 2 },
      }),
    });
    const body = (await created.json()) as { job: { id: string } };
    assert.equal(created.status, 201, JSON.stringify(body));
    const page = await session.open(`jobs/${body.job.id}`);
    const download = page.locator(`[data-testid="download-progress"] .download[data-repo="${REMOTE}"]`);
    await download.waitFor({ timeout: 60_000 });
    await until("the download to finish", async () => (await download.getAttribute("data-done")) === "true");
    assert.match(
      (await download.getByTestId("download-bytes").textContent()) ?? "",
      /^downloaded [\d.]+ (kB|MB)$/,
    );
    const files = await download.locator(".download-files td.mono").allTextContents();
    assert.ok(files.includes("config.json") && files.includes("model.safetensors"), files.join(", "));
    assert.equal(await download.locator('[role="progressbar"]').first().getAttribute("aria-valuenow"), "100");
    // The event log has one row for the download's completion, and training follows it.
    await page.locator(".event-download-completed").first().waitFor();
    assert.match(
      (await page.locator(".event-download-completed .event-message").first().textContent()) ?? "",
      new RegExp(`^model ${REMOTE} @ [0-9a-f]{12}: downloaded`),
    );
    await page.locator(".event-training-completed").waitFor({ timeout: 120_000 });
    await maybeScreenshot(page, "job-download");
  });

  test("Playground: Download fetches a typed Hub model with a progress bar; it turns cached and answers", async () => {
    const page = await session.open("playground");
    const model = page.getByTestId("pg-model");
    await until("model options", async () => (await model.locator("option").count()) >= 3);
    await model.selectOption("base-other");
    await page.getByTestId("pg-base").fill(PULLED);
    const download = page.getByTestId("pg-base-download");
    hub.chunkDelayMs = 1500;
    try {
      await download.getByTestId("pg-base-download-start").click();
      // Midway: the bar and the bytes of the whole, fewer files done than listed.
      const bytes = download.getByTestId("pg-base-download-bytes");
      const midway = await until("bytes midway", async () => {
        const text = (await bytes.textContent().catch(() => null)) ?? "";
        return /^[\d.]+ (B|kB|MB) \/ [\d.]+ (kB|MB) · \d of \d files$/.test(text) ? text : null;
      });
      const [done, total] = /(\d) of (\d) files/.exec(midway)!.slice(1).map(Number);
      assert.ok(done! < total!, midway);
      const percent = Number(await download.getByRole("progressbar").getAttribute("aria-valuenow"));
      assert.ok(percent >= 0 && percent < 100, String(percent));
      await maybeScreenshot(page, "playground-model-download");
    } finally {
      hub.chunkDelayMs = 0;
    }
    // Done: the server lists it, the picker shows it cached and the Model select holds it.
    const row = page.getByTestId("pg-base-options").locator(`button[data-model="${PULLED}"]`);
    await row.waitFor({ timeout: 60_000 });
    assert.equal(await row.getByTestId("model-badge").textContent(), "cached");
    await until("the model selected", async () => (await model.inputValue()) === `base:${PULLED}`);
    const answered = page.waitForResponse((r) => r.url().endsWith("/api/inference/chat"));
    await page.getByTestId("pg-input").fill("hello");
    await page.getByTestId("pg-send").click();
    const response = await answered;
    assert.equal(response.status(), 200, await response.text());
    await response.finished();
  });

  test("endpoint form: Download puts a typed Hub model in the server's cache; the picker lists it cached and the endpoint is created", async () => {
    const page = await newBaseModelEndpoint("pulled-base");
    await page.getByTestId("target-base").fill(FORM_PULLED);
    await page.getByTestId("target-base-download-start").click();
    const row = page.getByTestId("target-base-options").locator(`button[data-model="${FORM_PULLED}"]`);
    await row.waitFor({ timeout: 60_000 });
    assert.equal(await row.getByTestId("model-badge").textContent(), "cached");
    assert.equal(await row.getAttribute("aria-pressed"), "true");
    assert.equal(await page.getByTestId("target-base-download").count(), 0);
    await page.getByTestId("create-submit").click();
    await page.getByTestId("endpoint-list").getByText(`Base model: ${FORM_PULLED}`).waitFor();
  });
});
