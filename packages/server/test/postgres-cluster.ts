// PostgreSQL for the tests, provisioned by the tests themselves: the server
// named by SVC_TEST_DATABASE_URL when it is set (tests create and drop their
// own databases on it), otherwise a throwaway cluster of Debian's postgresql
// binaries: initdb in a temporary folder, a free port on 127.0.0.1, trust
// auth, never the machine's own cluster. `npm test` starts one cluster for the
// whole run and hands its URL to every test process; a test file run on its
// own with `node --test` starts one for itself.
//
// The cluster is owned by a small guard process (this file run as `node
// postgres-cluster.js serve`, in its own process group) that stops PostgreSQL
// and removes the folder when its stdin closes: when its starter calls
// stop(), exits or is killed, even with SIGKILL, nothing is left behind.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

const THIS_FILE = fileURLToPath(import.meta.url);
const SUPERUSER = "svc_test";

export interface PostgresCluster {
  /** postgres://svc_test@127.0.0.1:<port>/postgres: a superuser, so tests may create databases. */
  url: string;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/** Starts a throwaway cluster through its guard process. */
export function startPostgresCluster(): Promise<PostgresCluster> {
  const guard = spawn(process.execPath, [THIS_FILE, "serve"], {
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  guard.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  guard.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  return new Promise((resolve, reject) => {
    const onExit = () => reject(new Error(`the test PostgreSQL cluster did not start: ${stderr.trim()}`));
    guard.once("exit", onExit);
    guard.stdout.on("data", () => {
      const line = stdout.split("\n", 2);
      if (line.length < 2) return;
      guard.off("exit", onExit);
      const url = (JSON.parse(line[0]) as { url: string }).url;
      // From here on the guard must not keep this process alive: it goes when we do.
      guard.unref();
      for (const pipe of [guard.stdin, guard.stdout, guard.stderr])
        (pipe as unknown as { unref(): void }).unref();
      resolve({ url, stop: () => stopGuard(guard) });
    });
  });
}

function stopGuard(guard: ChildProcess): Promise<void> {
  if (guard.exitCode !== null || guard.signalCode !== null) return Promise.resolve();
  guard.ref();
  return new Promise((resolve) => {
    guard.once("exit", () => resolve());
    guard.stdin?.end();
  });
}

let ownCluster: Promise<string> | null = null;

/** The URL tests create their databases through: SVC_TEST_DATABASE_URL, else this process's own cluster. */
export function testDatabaseAdminUrl(): Promise<string> {
  const given = process.env.SVC_TEST_DATABASE_URL;
  if (given) return Promise.resolve(given);
  ownCluster ??= startPostgresCluster().then((cluster) => cluster.url);
  return ownCluster;
}

/** A fresh database on the tests' PostgreSQL, dropped by drop(). */
export async function createPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = await testDatabaseAdminUrl();
  const name = `svc_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

// ---- the guard process ----

/** The folder of initdb and postgres: Debian's newest /usr/lib/postgresql/<version>/bin, else the PATH's. */
function postgresBinDir(): string {
  const debian = "/usr/lib/postgresql";
  const versions = existsSync(debian) ? readdirSync(debian).filter((v) => /^\d+$/.test(v)) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  const dirs = [...versions.map((v) => join(debian, v, "bin")), ...(process.env.PATH ?? "").split(delimiter)];
  const found = dirs.find(
    (dir) => dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "postgres")),
  );
  if (found) return found;
  throw new Error(
    "PostgreSQL's initdb is not installed: install Debian's postgresql package (bash .ci/install does), " +
      "or set SVC_TEST_DATABASE_URL to a server on which the tests may create databases",
  );
}

/** initdb and postgres refuse to run as root: as root, run them as `postgres` (else `nobody`) via setpriv. */
function unprivileged(): { prefix: string[]; uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const users = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .map((line) => line.split(":"));
  const user = users.find((u) => u[0] === "postgres") ?? users.find((u) => u[0] === "nobody");
  if (!user)
    throw new Error("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as");
  const [uid, gid] = [Number(user[2]), Number(user[3])];
  return { prefix: ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--"], uid, gid };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes the folders of guards that died without cleaning up (a guard
 * killed itself, by kill -9), so such a death costs a folder until the next
 * cluster starts rather than for good. A folder is live while its guard.pid
 * runs; one without guard.pid (being set up) while it is under 10 minutes old.
 */
function sweepAbandoned(): void {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith("svc-pg-"))) {
    try {
      sweepIfAbandoned(join(tmpdir(), name));
    } catch {
      // a folder another guard is removing right now, or one we may not read: not ours to fix
    }
  }
}

function sweepIfAbandoned(dir: string): void {
  try {
    const guard = Number(readFileSync(join(dir, "guard.pid"), "utf8"));
    if (alive(guard)) return;
  } catch {
    if (Date.now() - statSync(dir).mtimeMs < 10 * 60_000) return;
  }
  // Its postgres, if it outlived the guard: stopped now (SIGQUIT), the folder removed next time.
  const pidFile = join(dir, "data", "postmaster.pid");
  const postmaster = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").split("\n")[0]) : 0;
  const cmdline =
    postmaster > 0 && alive(postmaster) ? readFileSync(`/proc/${postmaster}/cmdline`, "utf8") : "";
  if (cmdline.includes(join(dir, "data"))) process.kill(postmaster, "SIGQUIT");
  else rmSync(dir, { recursive: true, force: true });
}

async function accepts(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

function exited(proc: ChildProcess, ms: number): Promise<boolean> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    proc.once("exit", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function serve(): Promise<void> {
  const bin = postgresBinDir();
  const asUser = unprivileged();
  const run = (tool: string) => [...(asUser?.prefix ?? []), join(bin, tool)];
  sweepAbandoned();
  const dir = mkdtempSync(join(tmpdir(), "svc-pg-"));
  writeFileSync(join(dir, "guard.pid"), String(process.pid));
  if (asUser) chownSync(dir, asUser.uid, asUser.gid);
  chmodSync(dir, 0o700);
  let server: ChildProcess | null = null;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // SIGINT is PostgreSQL's fast shutdown; SIGQUIT its immediate one.
    if (server && !(await exited(server, 0))) {
      server.kill("SIGINT");
      if (!(await exited(server, 15_000))) server.kill("SIGQUIT");
      if (!(await exited(server, 5_000))) server.kill("SIGKILL");
      await exited(server, 5_000);
    }
    rmSync(dir, { recursive: true, force: true });
    process.exit();
  };
  // Our starter is gone (stop(), exit, or killed) once our stdin closes.
  process.stdin.on("end", stop).on("close", stop).resume();
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, stop);
  try {
    const data = join(dir, "data");
    const [initdb, ...initdbArgs] = run("initdb");
    const init = spawnSync(
      initdb,
      [
        ...initdbArgs,
        ...["-D", data, "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"],
      ],
      { encoding: "utf8" },
    );
    if (init.status !== 0)
      throw new Error(`initdb failed: ${init.error?.message ?? ""}${init.stderr}${init.stdout}`);
    const logFile = join(dir, "postgres.log");
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const log = openSync(logFile, "a");
      const [postgres, ...postgresArgs] = run("postgres");
      const settings = {
        listen_addresses: "127.0.0.1",
        unix_socket_directories: dir,
        max_connections: "200",
        // a throwaway cluster: durability buys nothing and costs the shared machine's disk time
        fsync: "off",
        synchronous_commit: "off",
        full_page_writes: "off",
      };
      const args = [
        "-D",
        data,
        "-p",
        String(port),
        ...Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`]),
      ];
      server = spawn(postgres, [...postgresArgs, ...args], { stdio: ["ignore", log, log] });
      const url = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
      const deadline = Date.now() + 60_000;
      while (server.exitCode === null && server.signalCode === null && Date.now() < deadline) {
        if (await accepts(url)) {
          process.stdout.write(`${JSON.stringify({ url, dir })}\n`);
          return;
        }
        await sleep(100);
      }
      const output = readFileSync(logFile, "utf8");
      // another process took the free port between our check and PostgreSQL's bind: try another
      if (attempt < 5 && /could not bind|Address already in use/.test(output)) continue;
      throw new Error(`postgres did not accept connections on 127.0.0.1:${port}:\n${output.slice(-4000)}`);
    }
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exitCode = 1;
    await stop();
  }
}

if (process.argv[1] === THIS_FILE && process.argv[2] === "serve") await serve();
