// Hub datasets through a real `svc server` process and the loopback test Hub:
// a Parquet split and a JSONL split are fetched into the Hugging Face cache,
// become datasets and train; the Alpaca and prompt/completion shapes map;
// a bad row is refused with its row number, an unknown split with the splits
// there are; a second read comes from the cache without asking the Hub.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  call,
  createJob,
  eventsUntilEnd,
  type Identity,
  newIdentity,
  type ServerProcess,
  startServerProcess,
  tempDir,
} from "./harness.js";
import { TestHub } from "./hub-server.js";

const fixtures = fileURLToPath(new URL("../../test/fixtures/hub-datasets/", import.meta.url));

let hub: TestHub;
let server: ServerProcess;
let id: Identity;
let hfHome: string;
let chatSha: string;
let partsSha: string;
let dataDir: string;

const jsonl = (rows: object[]) => `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;

function createHubDataset(huggingface: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return call(server.apiUrl, "POST", `/v1/datasets?${id.scope}`, {
    token: id.token,
    json: { huggingface, ...extra },
  });
}

before(async () => {
  hub = await TestHub.start();
  chatSha = hub.addRepo({ kind: "dataset", repo: "org/chat", dir: join(fixtures, "chat") });
  hub.addRepo({ kind: "dataset", repo: "org/alpaca", dir: join(fixtures, "alpaca") });
  hub.addRepo({ kind: "dataset", repo: "org/bad", dir: join(fixtures, "bad") });
  hub.addRepo({ kind: "dataset", repo: "org/gated", dir: join(fixtures, "chat"), gated: true });
  const qa = tempDir("hub-qa");
  writeFileSync(join(qa, "README.md"), "# questions\n");
  writeFileSync(
    join(qa, "train.jsonl"),
    jsonl(
      Array.from({ length: 6 }, (_, i) => ({
        question: `What is ${i} plus one?`,
        answer: `${i + 1}`,
        id: i,
      })),
    ),
  );
  writeFileSync(join(qa, "test.jsonl"), jsonl([{ question: "What is 9 plus one?", answer: "10", id: 9 }]));
  hub.addRepo({ kind: "dataset", repo: "org/qa", dir: qa });
  const pc = tempDir("hub-pc");
  mkdirSync(join(pc, "data"));
  writeFileSync(
    join(pc, "data", "train.jsonl"),
    jsonl(Array.from({ length: 4 }, (_, i) => ({ prompt: `Say ${i}.`, completion: `${i}` }))),
  );
  hub.addRepo({ kind: "dataset", repo: "org/pc", dir: pc });
  // Files whose names say no split, laid out by the README's configs section instead.
  const manual = tempDir("hub-manual");
  mkdirSync(join(manual, "raw"));
  writeFileSync(
    join(manual, "README.md"),
    "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: raw/first*.jsonl\n  - split: test\n    path: raw/second.jsonl\n---\n# manual\n",
  );
  writeFileSync(
    join(manual, "raw", "first.jsonl"),
    jsonl([
      { prompt: "a", completion: "b" },
      { prompt: "c", completion: "d" },
    ]),
  );
  writeFileSync(join(manual, "raw", "second.jsonl"), jsonl([{ prompt: "e", completion: "f" }]));
  hub.addRepo({ kind: "dataset", repo: "org/manual", dir: manual });
  // A split of two files whose names do not say how many there are.
  const parts = tempDir("hub-parts");
  mkdirSync(join(parts, "train"));
  writeFileSync(join(parts, "train", "a.jsonl"), jsonl([{ prompt: "1", completion: "2" }]));
  writeFileSync(join(parts, "train", "b.jsonl"), jsonl([{ prompt: "3", completion: "4" }]));
  partsSha = hub.addRepo({ kind: "dataset", repo: "org/parts", dir: parts });
  // A split of about 8,500 bytes: over what the server fetches for a dataset (4 × --max-dataset-bytes).
  const big = tempDir("hub-big");
  writeFileSync(
    join(big, "train.jsonl"),
    jsonl(Array.from({ length: 100 }, (_, i) => ({ prompt: `${i}`.padEnd(60, "."), completion: "x" }))),
  );
  hub.addRepo({ kind: "dataset", repo: "org/big", dir: big });
  hfHome = tempDir("hf-home");
  dataDir = tempDir("hub-data-dir");
  server = await startServerProcess({
    dataDir,
    env: { HF_ENDPOINT: hub.url, HF_HOME: hfHome },
    args: ["--max-dataset-bytes", "1500"],
  });
  id = await newIdentity(server.apiUrl);
});

after(async () => {
  await server?.stop();
  await hub?.close();
  rmSync(hfHome, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

async function trains(datasetId: string): Promise<void> {
  const job = await createJob(server.apiUrl, id, datasetId, { maxSteps: 2, saveSteps: 2 });
  const events = await eventsUntilEnd(server.apiUrl, id.token, job.id);
  const types = events.map((e) => e.event);
  assert.ok(
    types.includes("training.completed"),
    `the job did not complete: ${JSON.stringify(events.at(-2))}`,
  );
}

test("a Parquet split (push_to_hub's layout) is fetched into the HF cache, becomes a dataset and trains", async () => {
  const reply = await createHubDataset({ name: "org/chat", split: "train" });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  assert.equal(reply.body.dataset.name, "org/chat:train");
  assert.equal(reply.body.dataset.rows, 4);
  assert.deepEqual(reply.body.source, {
    type: "huggingface",
    name: "org/chat",
    split: "train",
    config: null,
    revision: chatSha,
    files: ["data/train-00000-of-00001.parquet"],
    shape: "messages",
    columns: { messages: "messages" },
    ignoredColumns: ["id"],
    fromCache: false,
  });
  // Where huggingface_hub puts it: datasets--org--chat/{refs/main, snapshots/<sha>/<path>}; only the split was fetched.
  const repoDir = join(hfHome, "hub", "datasets--org--chat");
  assert.ok(existsSync(join(repoDir, "snapshots", chatSha, "data", "train-00000-of-00001.parquet")));
  assert.ok(!existsSync(join(repoDir, "snapshots", chatSha, "data", "test-00000-of-00001.parquet")));
  await trains(reply.body.dataset.id);
});

test("the same split again comes from the cache with no request to the Hub", async () => {
  hub.clearRequests();
  const reply = await createHubDataset({ name: "org/chat", split: "train" }, { name: "capitals" });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  assert.equal(reply.body.dataset.name, "capitals");
  assert.equal(reply.body.source.fromCache, true);
  assert.deepEqual(hub.requests, []);
});

test("a JSONL split with its columns mapped (question/answer as prompt/completion) trains", async () => {
  const reply = await createHubDataset({
    name: "org/qa",
    split: "train",
    columns: { prompt: "question", completion: "answer" },
  });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  assert.equal(reply.body.dataset.rows, 6);
  assert.deepEqual(reply.body.source.files, ["train.jsonl"]);
  assert.equal(reply.body.source.shape, "prompt_completion");
  assert.deepEqual(reply.body.source.ignoredColumns, ["id"]);
  await trains(reply.body.dataset.id);
});

test("Alpaca columns and prompt/completion columns are found without a mapping", async () => {
  const alpaca = await createHubDataset({ name: "org/alpaca", split: "train" });
  assert.equal(alpaca.status, 201, JSON.stringify(alpaca.body));
  assert.equal(alpaca.body.dataset.rows, 4);
  assert.equal(alpaca.body.source.shape, "alpaca");
  assert.deepEqual(alpaca.body.source.columns, {
    instruction: "instruction",
    output: "output",
    input: "input",
  });
  const pc = await createHubDataset({ name: "org/pc", split: "train" });
  assert.equal(pc.status, 201, JSON.stringify(pc.body));
  assert.equal(pc.body.source.shape, "prompt_completion");
  assert.deepEqual(pc.body.source.files, ["data/train.jsonl"]);
});

test("a README.md configs section decides the split's files, and is read from the cache the second time", async () => {
  const train = await createHubDataset({ name: "org/manual", split: "train" });
  assert.equal(train.status, 201, JSON.stringify(train.body));
  assert.deepEqual(train.body.source.files, ["raw/first.jsonl"]);
  assert.equal(train.body.source.config, "default");
  assert.equal(train.body.dataset.rows, 2);
  hub.clearRequests();
  const again = await createHubDataset({ name: "org/manual", split: "train" });
  assert.equal(again.status, 201, JSON.stringify(again.body));
  assert.equal(again.body.source.fromCache, true);
  assert.deepEqual(hub.requests, []);
  const missing = await createHubDataset({ name: "org/manual", split: "validation" });
  assert.equal(missing.status, 400);
  assert.match(
    missing.body.error.message,
    /no split "validation" in config "default" of its README.md; splits: "train", "test"/,
  );
});

test("a split the cache holds only part of (a download cut short) is completed from the Hub, not read as the whole", async () => {
  const first = await createHubDataset({ name: "org/parts", split: "train" });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.body.dataset.rows, 2);
  // What a cut-short download leaves: one of the split's files linked in the snapshot.
  rmSync(join(hfHome, "hub", "datasets--org--parts", "snapshots", partsSha, "train", "b.jsonl"));
  hub.clearRequests();
  const again = await createHubDataset({ name: "org/parts", split: "train" });
  assert.equal(again.status, 201, JSON.stringify(again.body));
  assert.equal(again.body.dataset.rows, 2);
  assert.deepEqual(again.body.source.files, ["train/a.jsonl", "train/b.jsonl"]);
  assert.ok(hub.requestsTo("/api/datasets/org/parts").length > 0);
  // A cache svc did not fill (no record of the split, as after a Python tool): the Hub is asked for the listing only.
  rmSync(join(dataDir, "hub-datasets"), { recursive: true, force: true });
  hub.clearRequests();
  const listed = await createHubDataset({ name: "org/parts", split: "train" });
  assert.equal(listed.status, 201, JSON.stringify(listed.body));
  assert.equal(listed.body.source.fromCache, true);
  assert.deepEqual(hub.requestsTo("/resolve/"), []);
});

test("refusals: a bad row by its row number, an unknown split, unknown columns; nothing is stored", async () => {
  const before = (await call(server.apiUrl, "GET", `/v1/datasets?${id.scope}`, { token: id.token })).body
    .datasets.length;
  const bad = await createHubDataset({ name: "org/bad", split: "train" });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body.error, {
    code: "invalid_dataset",
    message:
      'org/bad split "train" row 3 (data/train-00000-of-00001.parquet row 3): column "completion" must be a string, got null',
  });
  const split = await createHubDataset({ name: "org/chat", split: "validation" });
  assert.equal(split.status, 400);
  assert.equal(split.body.error.code, "hub_dataset_split_not_found");
  assert.match(split.body.error.message, /org\/chat: no split "validation"; splits found: "test", "train"/);
  const columns = await createHubDataset({ name: "org/qa", split: "train" });
  assert.equal(columns.status, 400);
  assert.equal(columns.body.error.code, "hub_dataset_columns");
  assert.match(columns.body.error.message, /columns found: "question", "answer", "id"/);
  const missing = await createHubDataset({ name: "org/nothing", split: "train" });
  assert.equal(missing.status, 400, JSON.stringify(missing.body));
  assert.equal(missing.body.error.code, "hub_not_found");
  assert.match(missing.body.error.message, /^"huggingface.name": dataset org\/nothing: not found on the Hub/);
  const gated = await createHubDataset({ name: "org/gated", split: "train" });
  assert.equal(gated.status, 400, JSON.stringify(gated.body));
  assert.equal(gated.body.error.code, "hub_gated");
  assert.match(gated.body.error.message, /dataset org\/gated: .*refused access \(401\).*HF_TOKEN/);
  hub.clearRequests();
  const big = await createHubDataset({ name: "org/big", split: "train" });
  assert.equal(big.status, 413, JSON.stringify(big.body));
  assert.match(
    big.body.error.message,
    /org\/big: the split's files are \d+ bytes, over the 6000 this server fetches/,
  );
  assert.deepEqual(hub.requestsTo("/resolve/"), []);
  const badRevision = await createHubDataset({ name: "org/chat", split: "train", revision: "../main" });
  assert.equal(badRevision.status, 400);
  assert.match(
    badRevision.body.error.message,
    /"huggingface.revision": "..\/main" is not a branch, tag or commit sha/,
  );
  const unknownField = await createHubDataset({ name: "org/chat", split: "train", subset: "x" });
  assert.equal(unknownField.status, 400);
  assert.match(unknownField.body.error.message, /subset/);
  const after = (await call(server.apiUrl, "GET", `/v1/datasets?${id.scope}`, { token: id.token })).body
    .datasets.length;
  assert.equal(after, before);
});

test("HF_HUB_OFFLINE=1: a cached split is read, an uncached one is refused naming HF_HUB_OFFLINE", async () => {
  const offline = await startServerProcess({
    env: { HF_ENDPOINT: hub.url, HF_HOME: hfHome, HF_HUB_OFFLINE: "1" },
  });
  try {
    const me = await newIdentity(offline.apiUrl);
    const post = (huggingface: object) =>
      call(offline.apiUrl, "POST", `/v1/datasets?${me.scope}`, { token: me.token, json: { huggingface } });
    hub.clearRequests();
    const cached = await post({ name: "org/chat", split: "train" });
    assert.equal(cached.status, 201, JSON.stringify(cached.body));
    assert.equal(cached.body.source.fromCache, true);
    const cold = await post({ name: "org/qa", split: "test" });
    assert.equal(cold.status, 400, JSON.stringify(cold.body));
    assert.equal(cold.body.error.code, "hub_offline");
    assert.match(cold.body.error.message, /not in the Hugging Face cache .*HF_HUB_OFFLINE=1/);
    assert.deepEqual(hub.requests, []);
  } finally {
    await offline.stop();
  }
});
