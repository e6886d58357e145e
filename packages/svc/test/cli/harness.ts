// Real processes for the CLI tests: the `svc` binary, a `svc server` on ephemeral
// ports with its own data directory, temporary HOMEs and projects.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, from packages/svc/dist/test/cli/. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "..");
export const SVC_BIN = join(REPO_ROOT, "packages", "svc", "bin", "svc.js");

export const TEST_MODEL = "test/tiny-random";

export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `svc-${prefix}-`));
}

/** Environment for a CLI process: its own HOME, the given cloud API, the test model admitted. */
export function cliEnv(
  home: string,
  apiUrl: string | null,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.SVC_CLOUD_API_URL;
  delete env.SVC_PROJECT_DIR;
  // Test data servers listen on loopback, which svc server only fetches dataset URLs from when allowed.
  Object.assign(
    env,
    { HOME: home, SVC_EXTRA_MODELS: TEST_MODEL, NO_COLOR: "1", SVC_DATASET_URL_ALLOW: "127.0.0.1" },
    extra,
  );
  if (apiUrl) env.SVC_CLOUD_API_URL = apiUrl;
  return env;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runSvc(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<RunResult> {
  return runProcess(process.execPath, [SVC_BIN, ...args], options);
}

export function runProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number; input?: string },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const stdin = options.input === undefined ? "ignore" : "pipe";
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: [stdin, "pipe", "pipe"],
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d) => {
      stdout += d;
    });
    child.stderr!.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${args.join(" ")} timed out\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, options.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface TestServer {
  apiUrl: string;
  edgeUrl: string;
  deploymentDomain: string;
  dataDir: string;
  process: ChildProcess;
  log(): string;
  stop(): Promise<void>;
}

/**
 * `svc server` on ephemeral ports (or the given API port, to stand in for a server
 * that came back); resolves once it prints its ready line.
 */
export async function startTestServer(options: {
  home: string;
  args?: string[];
  port?: number;
  dataDir?: string;
  /** Extra environment for the server (HF_HOME, HF_ENDPOINT, ...). */
  env?: Record<string, string>;
}): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await tempDir("server-data"));
  const port = String(options.port ?? 0);
  const child = spawn(
    process.execPath,
    // Test files mint many anonymous identities from one address (the server's tests check the limit).
    [
      SVC_BIN,
      "server",
      "--port",
      port,
      "--edge-port",
      "0",
      "--data-dir",
      dataDir,
      "--rate-limit-signup",
      "off",
      ...(options.args ?? []),
    ],
    { env: cliEnv(options.home, null, options.env), stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  const ready = await new Promise<{ apiUrl: string; edgeUrl: string; deploymentDomain: string }>(
    (resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`svc server did not start:\n${output}`)), 60_000);
      const onData = (d: Buffer) => {
        output += d;
        const m = /^svc-server-ready (.+)$/m.exec(output);
        if (m) {
          clearTimeout(timer);
          resolve(JSON.parse(m[1]));
        }
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      child.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`svc server exited with ${code}:\n${output}`));
      });
    },
  );
  return {
    ...ready,
    dataDir,
    process: child,
    log: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        // a process killed by a signal has a signalCode and no exitCode, and has already sent "exit"
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
      }),
  };
}

/** A tool whose one argument is an enum, so that a call the tiny random model samples under it parses. */
export const LOOKUP_ORDER_TOOL = {
  type: "function" as const,
  function: {
    name: "lookup_order",
    parameters: {
      type: "object",
      properties: { order_id: { type: "string", enum: ["A1", "B2"] } },
      required: ["order_id"],
      additionalProperties: false,
    },
  },
};

/** `svc server` with no bundled models, serving a fresh tiny random model as TEST_MODEL. */
export async function startTestModelServer(home: string): Promise<TestServer> {
  const model = await createTestModel();
  return startTestServer({ home, args: ["--bundled-models", "none", "--model", `${TEST_MODEL}=${model}`] });
}

/** A tiny random Llama folder (the engine's test helper), to register as TEST_MODEL; `options` sizes it. */
export async function createTestModel(options: Record<string, unknown> = {}): Promise<string> {
  const dir = await tempDir("tiny-model");
  const url = join(REPO_ROOT, "packages", "engine", "dist", "src", "testing", "random-model.js");
  const { createRandomModel } = (await import(url)) as {
    createRandomModel(dir: string, options?: Record<string, unknown>): Promise<void>;
  };
  await createRandomModel(dir, { seed: 1, ...options });
  return dir;
}

/** A TCP port nothing listens on at the moment of asking. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface LiveProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the output once it matches `re`; rejects when the process ends first or after timeoutMs. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  done: Promise<RunResult>;
}

/** A process whose output the test watches while it runs (to act mid-run). stdout and stderr interleave. */
export function startProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): LiveProcess {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let all = "";
  let stdout = "";
  let stderr = "";
  const listeners = new Set<() => void>();
  const onData = (which: "out" | "err") => (d: Buffer) => {
    all += d;
    if (which === "out") stdout += d;
    else stderr += d;
    for (const l of listeners) l();
  };
  child.stdout!.on("data", onData("out"));
  child.stderr!.on("data", onData("err"));
  const done = new Promise<RunResult>((resolve) =>
    child.on("close", (code) => {
      for (const l of listeners) l();
      resolve({ code, stdout, stderr });
    }),
  );
  return {
    child,
    output: () => all,
    done,
    waitFor: (re, timeoutMs = 120_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (re.test(all)) {
            cleanup();
            resolve(all);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            cleanup();
            reject(new Error(`process ended before ${re}:\n${all}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no ${re} within ${timeoutMs} ms:\n${all}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      }),
  };
}

/** Whether util-linux `script` is installed: it runs a command on a pseudo-terminal. */
export const HAS_SCRIPT = (() => {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** `script`'s arguments to run a shell command line on a pseudo-terminal, quietly, flushing as it goes. */
export const ptyArgs = (command: string) => ["-qfec", command, "/dev/null"];
