// exportModel writes the files a server names into `out`: a server (or
// anything between it and the CLI) naming "../x" or an absolute path must not
// write outside it. A real HTTP server answers the export endpoints with such
// names; the download is refused before any file is written.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CloudApiClient } from "./client.js";
import { ExportFailedError, exportModel } from "./export.js";

const EXPORT_ID = "01a20f04-e4a8-71cf-81cd-1a7cfa0618ad";
let fileName = "";
let downloads = 0;
let server: Server;
let baseUrl = "";

before(async () => {
  server = createServer((request, response) => {
    if (request.url?.startsWith(`/v1/exports/${EXPORT_ID}/`)) downloads++;
    const info = {
      id: EXPORT_ID,
      status: "ready",
      progress: null,
      error: null,
      projectId: "p",
      format: "peft",
      quant: null,
      jobId: null,
      step: null,
      baseModel: "test/tiny",
      files: [
        { path: "adapter_config.json", bytes: 2 },
        { path: fileName, bytes: 2 },
      ],
      warnings: [],
      createdAt: new Date().toISOString(),
    };
    response.setHeader("content-type", "application/json");
    response.end(
      request.url?.startsWith(`/v1/exports/${EXPORT_ID}/`) ? "{}" : JSON.stringify({ export: info }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

test("an export file the server names outside the output folder is refused, and nothing is written", async () => {
  const root = mkdtempSync(join(tmpdir(), "svc-export-names-"));
  try {
    const client = new CloudApiClient({ baseUrl, token: "t", scope: { orgSlug: "o", projectSlug: "p" } });
    for (const name of [
      "../escaped.txt",
      "../../escaped.txt",
      "/tmp/escaped.txt",
      "sub/../../escaped.txt",
      "..",
      "a\\b",
    ]) {
      fileName = name;
      downloads = 0;
      const out = join(root, "out", "inner");
      await assert.rejects(
        exportModel(client, { source: "test/tiny", format: "peft", out, pollMs: 1 }),
        (error: unknown) =>
          error instanceof ExportFailedError &&
          error.code === "invalid_export_file" &&
          error.message.includes(JSON.stringify(name)),
      );
      assert.equal(downloads, 0, name);
      assert.ok(!existsSync(join(root, "out")), `${name}: ${readdirSync(root)}`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
