// Test harness: runs a real `svc dev` process (packages/svc/bin/svc.js) in a
// temporary project with its own HOME, and raw HTTP requests whose Host header
// the test chooses (fetch forbids setting Host).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const SVC_BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "bin", "svc.js");

export interface StudioProcess {
  port: number;
  url: string;
  token: string;
  projectDir: string;
  home: string;
  proc: ChildProcess;
  output: () => string;
  stop: () => Promise<number | null>;
}

export const TRAINER_SOURCE = `import { createSvc, createTrainer } from "svc";

const trainer = createTrainer({
  name: "support-bot",
  model: "svc/pico-llama",
  dataset: { type: "file", path: "data/train.jsonl" },
  maxSteps: 12,
  evalSteps: 4,
  saveSteps: 6,
  learningRate: 0.003,
  seed: 1,
});

export default createSvc({ trainer });
`;

export async function makeProject(
  options: { source?: string | null; rows?: string } = {},
): Promise<{ projectDir: string; home: string }> {
  const root = await mkdtemp(join(tmpdir(), "svc-studio-test-"));
  const projectDir = join(root, "demo-project");
  const home = join(root, "home");
  await mkdir(join(projectDir, "src", "svc"), { recursive: true });
  await mkdir(join(projectDir, "data"), { recursive: true });
  await mkdir(home, { recursive: true });
  if (options.source !== null)
    await writeFile(join(projectDir, "src", "svc", "index.ts"), options.source ?? TRAINER_SOURCE);
  const rows =
    options.rows ??
    Array.from({ length: 24 }, (_, i) =>
      JSON.stringify({
        messages: [
          { role: "user", content: `What is ${i} plus ${i}?` },
          { role: "assistant", content: `${i} plus ${i} is ${2 * i}.` },
        ],
      }),
    ).join("\n");
  await writeFile(join(projectDir, "data", "train.jsonl"), `${rows}\n`);
  return { projectDir, home };
}

export async function startStudio(options: {
  projectDir: string;
  home: string;
  args?: string[];
  env?: Record<string, string>;
}): Promise<StudioProcess> {
  const proc = spawn(process.execPath, [SVC_BIN, "dev", ...(options.args ?? ["--port", "0"])], {
    cwd: options.projectDir,
    env: { ...process.env, HOME: options.home, NO_COLOR: "1", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d) => {
    out += d;
  });
  proc.stderr!.on("data", (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc dev did not print its URL:\n${out}`)), 20_000);
    const check = () => {
      const m = out.match(/http:\/\/localhost:(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout!.on("data", check);
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`svc dev exited with ${code}:\n${out}`));
    });
  });
  const html = (await rawRequest(port, { path: "/" })).body;
  const token = html.match(/<meta name="svc-studio-token" content="([^"]+)"/)?.[1];
  if (!token) throw new Error(`no token meta tag in:\n${html}`);
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    token,
    projectDir: options.projectDir,
    home: options.home,
    proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode === null) proc.kill("SIGINT");
      return exited;
    },
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP/1.1 request to 127.0.0.1:port with exactly the headers given (Host defaults to 127.0.0.1:port). */
export function rawRequest(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: options.method ?? "GET",
        path: options.path,
        headers: {
          Host: `127.0.0.1:${port}`,
          ...(options.body !== undefined
            ? { "Content-Length": String(Buffer.byteLength(options.body)) }
            : {}),
          ...options.headers,
        },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d) => {
          body += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** fetch against Studio with its token header. */
export function studioFetch(s: StudioProcess, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("X-Svc-Studio-Token", s.token);
  if (init.body !== undefined && !headers.has("Content-Type"))
    headers.set("Content-Type", "application/json");
  return fetch(s.url + path, { ...init, headers });
}

/** A closed loopback port: a cloud API URL that nothing answers on. */
export const DEAD_CLOUD_API = "http://127.0.0.1:9";
