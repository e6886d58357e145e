// What the tests of svc's OpenAI routes share: the official client pointed at
// a test server for an identity (as a script moved from OpenAI would set it:
// baseURL, the key, and organization/project as svc's org and project
// slugs), the bundled model those tests train, and the check that a refusal
// is OpenAI's error shape with the expected status, param and code.
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI, { APIError } from "openai";
import type { Identity } from "./harness.js";

export const PICO = "svc/pico-llama";
export const PICO_DIR = join(fileURLToPath(new URL("../../../..", import.meta.url)), "models/pico-llama");

/** The client for `id` on `server`; a scope of null leaves that header out. */
export const openAiClient = (
  server: { apiUrl: string },
  id: Identity,
  scope: { organization?: string | null; project?: string | null } = {},
) =>
  new OpenAI({
    apiKey: id.token,
    baseURL: `${server.apiUrl}/v1`,
    organization: scope.organization === undefined ? id.orgSlug : scope.organization,
    project: scope.project === undefined ? id.projectSlug : scope.project,
    maxRetries: 0,
  });

/** The client's error for `request`, checked to be OpenAI's shape with this status, param and code. */
export async function refused(
  request: Promise<unknown>,
  expected: { status: number; param: string | null; code: string; message?: RegExp },
): Promise<APIError> {
  const error = await request.then(
    () => assert.fail("the request was not refused"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof APIError, `not an APIError: ${error}`);
  assert.equal(error.status, expected.status, error.message);
  const body = error.error as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ["code", "message", "param", "type"]);
  // OpenAI types every client error so, a wrong API key included.
  assert.equal(body.type, "invalid_request_error");
  assert.equal(body.param, expected.param, String(body.message));
  assert.equal(body.code, expected.code, String(body.message));
  if (expected.message) assert.match(String(body.message), expected.message);
  return error;
}

/** A succeeded job's result file (OpenAI's metrics CSV): its columns, and each row's cells by column. */
export async function resultCsv(
  client: OpenAI,
  job: { result_files: string[] },
): Promise<{ columns: string[]; rows: Record<string, string>[] }> {
  assert.equal(job.result_files.length, 1);
  const [head, ...lines] = (await (await client.files.content(job.result_files[0])).text())
    .trim()
    .split("\n");
  const columns = head.split(",");
  const rows = lines.map((line) => {
    const cells = line.split(",");
    assert.equal(cells.length, columns.length, line);
    return Object.fromEntries(columns.map((column, i) => [column, cells[i]]));
  });
  return { columns, rows };
}
