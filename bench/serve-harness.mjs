// Shared by the server benchmarks: start `svc server` as a child process on
// ephemeral ports over a temporary data dir with a tiny random model, and
// small JSON helpers. Needs a build (npm run build).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const MAIN_JS = join(root, "packages/server/dist/src/main.js");

export async function tinyModel(options = {}) {
  const { createRandomModel } = await import(join(root, "packages/engine/dist/src/testing/index.js"));
  const dir = join(mkdtempSync(join(tmpdir(), "svc-bench-model-")), "tiny");
  await createRandomModel(dir, { seed: 1, ...options });
  return dir;
}

/** `svc server` serving `modelDir` as `modelName`; resolves once it is ready. */
export async function startServer(modelDir, extraArgs = [], modelName = "bench/tiny") {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-data-"));
  const args = [
    MAIN_JS,
    "server",
    "--port",
    "0",
    "--edge-port",
    "0",
    "--data-dir",
    dataDir,
    "--bundled-models",
    "none",
    // Benchmarks measure the server's own costs: no request rate limits.
    "--rate-limit-key",
    "off",
    "--rate-limit-identity",
    "off",
    "--rate-limit-signup",
    "off",
  ];
  args.push("--model", `${modelName}=${modelDir}`, ...extraArgs);
  const proc = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const ready = await new Promise((resolve, reject) => {
    proc.stdout.on("data", (chunk) => {
      out += chunk;
      const match = /svc-server-ready (\{.*\})/.exec(out);
      if (match) resolve(JSON.parse(match[1]));
    });
    proc.once("exit", (code) => reject(new Error(`server exited with ${code}\n${out}`)));
  });
  return {
    ...ready,
    /** What the server printed on stdout so far. */
    output: () => out,
    kill: () => proc.kill("SIGTERM"),
    stop: () =>
      new Promise((resolve) => {
        proc.once("exit", resolve);
        proc.kill("SIGTERM");
      }),
  };
}

export async function api(base, method, path, { token, json, body, headers = {} } = {}) {
  const h = { ...headers };
  if (token) h.authorization = `Bearer ${token}`;
  if (json !== undefined) h["content-type"] = "application/json";
  const response = await fetch(`${base}${path}`, {
    method,
    headers: h,
    body: json !== undefined ? JSON.stringify(json) : body,
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

export async function identity(base) {
  const { token, org } = await api(base, "POST", "/v1/auth/anonymous");
  await api(base, "POST", "/v1/projects", { token, json: { orgSlug: org.slug, slug: "bench" } });
  return { token, scope: `orgSlug=${org.slug}&projectSlug=bench` };
}

/** Peak resident memory (VmHWM, kB) of a process and its children, sampled until stopped. */
export function watchMemory(rootPid) {
  const peaks = new Map(); // pid -> { name, kb }
  const status = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/status`, "utf8");
    } catch {
      return null;
    }
  };
  const childrenOf = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  };
  const cmdline = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
    } catch {
      return "";
    }
  };
  const sample = () => {
    for (const pid of [rootPid, ...childrenOf(rootPid)]) {
      const text = status(pid);
      const kb = Number(/^VmHWM:\s+(\d+)/m.exec(text ?? "")?.[1] ?? 0);
      if (!kb) continue;
      const cmd = cmdline(pid);
      const name =
        pid === rootPid
          ? "server"
          : cmd.includes("training-process")
            ? "training"
            : cmd.includes("inference-process")
              ? "inference"
              : "other";
      const seen = peaks.get(pid);
      peaks.set(pid, { name, kb: Math.max(kb, seen?.kb ?? 0) });
    }
  };
  const timer = setInterval(sample, 500);
  sample();
  return {
    stop() {
      clearInterval(timer);
      sample();
      const byName = {};
      for (const { name, kb } of peaks.values()) byName[name] = Math.max(byName[name] ?? 0, kb);
      return byName;
    },
  };
}

/** Every event of a job so far, read to the end of its stream (call it once the job has ended). */
export async function allEvents(base, token, jobId) {
  const response = await fetch(`${base}/v1/jobs/${jobId}/events`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const text = await response.text();
  return text
    .split("\n\n")
    .map((block) => /^data: (.*)$/m.exec(block)?.[1])
    .filter(Boolean)
    .map((d) => JSON.parse(d));
}
