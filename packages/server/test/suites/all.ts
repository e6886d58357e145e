// Every route group against one server process on the given storage backend.
import { after, before, describe } from "node:test";
import { type Backend, type ServerProcess, serverFor } from "../harness.js";
import { datasetTests, MAX_DATASET_BYTES } from "./datasets.js";
import { deploymentTests } from "./deployments.js";
import { edgeTests } from "./edge.js";
import { endToEndTests } from "./end-to-end.js";
import { hardeningTests } from "./hardening.js";
import { ssrfTests } from "./hardening-ssrf.js";
import { identityTests } from "./identity.js";
import { inferenceTests } from "./inference.js";
import { jobTests } from "./jobs.js";

export function serverSuite(backend: Backend) {
  let server: Awaited<ReturnType<typeof serverFor>>;
  const current = (): ServerProcess => server;
  before(async () => {
    // The URL-import tests fetch from loopback test servers, which only an allowed host may be.
    server = await serverFor(backend, [
      "--max-dataset-bytes",
      String(MAX_DATASET_BYTES),
      "--dataset-url-allow",
      "127.0.0.1",
    ]);
  });
  after(async () => {
    await server?.cleanup();
  });
  describe(`identity and projects (${backend})`, () => identityTests(current));
  describe(`datasets (${backend})`, () => datasetTests(current));
  describe(`jobs and events (${backend})`, () => jobTests(current));
  describe(`inference (${backend})`, () => inferenceTests(current));
  describe(`deployments and keys (${backend})`, () => deploymentTests(current));
  describe(`edge (${backend})`, () => edgeTests(current));
  describe(`end to end (${backend})`, () => endToEndTests(current));
  describe(`hardening: dataset URLs (${backend})`, () => ssrfTests(backend, current));
  describe(`hardening (${backend})`, () => hardeningTests(backend, () => server));
}
