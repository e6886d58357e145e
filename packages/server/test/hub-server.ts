// A Hugging Face Hub on loopback for tests, answering as the Hub documents its
// API and as @huggingface/hub and huggingface_hub call it:
//   GET  /api/{models|datasets}/{repo}/revision/{rev}   { id, sha, siblings, gated, private }
//   GET  /api/{models|datasets}/{repo}/tree/{rev}[/{path}]?recursive=  [{ type, path, size, oid, lfs? }]
//   HEAD|GET /{repo}/resolve/{rev}/{file}, /datasets/{repo}/resolve/{rev}/{file}
//        ETag, X-Repo-Commit; LFS files (safetensors, parquet, anything over
//        10 kB) answer 302 to a blob URL on another host (127.0.0.2) with
//        X-Linked-Etag and X-Linked-Size, as the Hub redirects to its CDN;
//        Range requests answer 206
// 401 for a gated repo without a valid token, 404 (X-Error-Code) for unknown
// repos, revisions and files. Every request is logged, so a test can assert
// that nothing was asked; cutAfter() breaks the next file response after N
// bytes (the connection is destroyed), to test resuming.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

export interface HubRequest {
  method: string;
  path: string;
  range: string | null;
  authorization: string | null;
}

interface HubFile {
  path: string;
  bytes: Buffer;
  oid: string;
  lfs: { oid: string; size: number } | null;
}

interface HubRepo {
  kind: "model" | "dataset";
  id: string;
  sha: string;
  refs: Set<string>;
  gated: boolean;
  files: Map<string, HubFile>;
}

export interface AddRepoOptions {
  kind?: "model" | "dataset";
  /** `org/name` */
  repo: string;
  /** A folder whose files (recursively) are the repo's files at its one commit. */
  dir: string;
  /** Answer 401 unless a token given to the server is sent. */
  gated?: boolean;
  /** Branch or tag names besides "main" that point at the commit. */
  refs?: string[];
}

const LFS_MIN_BYTES = 10_000;
const gitOid = (bytes: Buffer) =>
  createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");

function filesOf(dir: string, sub = ""): { path: string; bytes: Buffer }[] {
  const out: { path: string; bytes: Buffer }[] = [];
  for (const name of readdirSync(join(dir, sub)).sort()) {
    const path = sub ? `${sub}/${name}` : name;
    if (statSync(join(dir, path)).isDirectory()) out.push(...filesOf(dir, path));
    else out.push({ path, bytes: readFileSync(join(dir, path)) });
  }
  return out;
}

export class TestHub {
  readonly requests: HubRequest[] = [];
  /** Tokens that open gated repos (they must start with "hf_", as @huggingface/hub checks). */
  readonly tokens = new Set<string>();
  private readonly repos = new Map<string, HubRepo>();
  private cut: { afterBytes: number; times: number } | null = null;
  /** Delay between 64 kB chunks of a file body (slow downloads, to cancel one midway). */
  chunkDelayMs = 0;

  private constructor(
    private readonly servers: Server[],
    readonly url: string,
    /** Where LFS files are redirected to: another host, as the Hub's CDN is. */
    private readonly cdnUrl: string,
  ) {}

  /**
   * The environment of a server process that downloads from this Hub alone,
   * anonymously and online, into the cache under hfHome.
   */
  serverEnv(hfHome: string): NodeJS.ProcessEnv {
    return {
      ...process.env,
      HF_HOME: hfHome,
      HF_ENDPOINT: this.url,
      HF_TOKEN: "",
      HF_HUB_OFFLINE: "",
      HF_HUB_CACHE: "",
    };
  }

  static async start(): Promise<TestHub> {
    let hub: TestHub | null = null;
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      hub!.handle(req, res).catch((error) => {
        if (!res.headersSent) res.writeHead(500).end(String(error));
        else res.destroy();
      });
    };
    const listen = (host: string) =>
      new Promise<Server>((resolve, reject) => {
        const server = createServer(handler);
        server.once("error", reject);
        server.listen(0, host, () => resolve(server));
      });
    const address = (server: Server, host: string) =>
      `http://${host}:${(server.address() as AddressInfo).port}`;
    const main = await listen("127.0.0.1");
    // The CDN on another loopback address (Linux routes all of 127/8 to loopback); the same host elsewhere.
    const cdn = await listen("127.0.0.2").catch(() => null);
    hub = new TestHub(
      cdn ? [main, cdn] : [main],
      address(main, "127.0.0.1"),
      cdn ? address(cdn, "127.0.0.2") : address(main, "127.0.0.1"),
    );
    return hub;
  }

  /** Registers (or replaces) a repo from a folder; returns its commit sha. */
  addRepo(options: AddRepoOptions): string {
    const kind = options.kind ?? "model";
    const files = new Map<string, HubFile>();
    const commit = createHash("sha1").update(`${kind}:${options.repo}\n`);
    for (const { path, bytes } of filesOf(options.dir)) {
      const isLfs = bytes.length > LFS_MIN_BYTES || /\.(safetensors|parquet|bin)$/.test(path);
      const lfs = isLfs
        ? { oid: createHash("sha256").update(bytes).digest("hex"), size: bytes.length }
        : null;
      const oid = gitOid(bytes);
      files.set(path, { path, bytes, oid, lfs });
      commit.update(`${path} ${oid}\n`);
    }
    const sha = commit.digest("hex");
    this.repos.set(`${kind}:${options.repo}`, {
      kind,
      id: options.repo,
      sha,
      refs: new Set(["main", ...(options.refs ?? [])]),
      gated: options.gated ?? false,
      files,
    });
    return sha;
  }

  /** Takes a repo off the Hub (later requests for it answer 404). */
  removeRepo(kind: "model" | "dataset", repo: string): void {
    this.repos.delete(`${kind}:${repo}`);
  }

  /** The next `times` file responses (GET of a file's bytes) end after `afterBytes` bytes. */
  cutAfter(afterBytes: number, times = 1): void {
    this.cut = { afterBytes, times };
  }

  /** Requests whose path includes `part` (all when left out). */
  requestsTo(part = ""): HubRequest[] {
    return this.requests.filter((r) => r.path.includes(part));
  }

  clearRequests(): void {
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.servers.map((server) => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      }),
    );
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const path = decodeURIComponent(url.pathname);
    this.requests.push({
      method: req.method ?? "GET",
      path: url.pathname + url.search,
      range: req.headers.range ?? null,
      authorization: req.headers.authorization ?? null,
    });
    let m = path.match(/^\/api\/(models|datasets)\/([^/]+\/[^/]+)\/(revision|tree)\/([^/]+)(?:\/(.*))?$/);
    if (m) {
      const repo = this.access(req, res, m[1] === "models" ? "model" : "dataset", m[2]!, m[4]!);
      if (!repo) return;
      if (m[3] === "revision")
        return json(res, 200, {
          _id: repo.sha.slice(0, 24),
          id: repo.id,
          sha: repo.sha,
          private: false,
          gated: repo.gated ? "auto" : false,
          downloads: 0,
          likes: 0,
          lastModified: "2026-01-01T00:00:00.000Z",
          siblings: [...repo.files.keys()].map((rfilename) => ({ rfilename })),
        });
      const under = m[5] ? `${m[5]}/` : "";
      const recursive = url.searchParams.get("recursive") === "true";
      const entries = [...repo.files.values()]
        .filter((f) => f.path.startsWith(under) && (recursive || !f.path.slice(under.length).includes("/")))
        .map((f) => ({
          type: "file",
          oid: f.oid,
          size: f.bytes.length,
          path: f.path,
          ...(f.lfs ? { lfs: { oid: f.lfs.oid, size: f.lfs.size, pointerSize: 134 } } : {}),
        }));
      return json(res, 200, entries);
    }
    m = path.match(/^\/(datasets\/)?([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/);
    if (m) {
      const repo = this.access(req, res, m[1] ? "dataset" : "model", m[2]!, m[3]!);
      if (!repo) return;
      const file = repo.files.get(m[4]!);
      if (!file) return notFound(res, "EntryNotFound", `${m[4]} is not in ${repo.id}`);
      const common = { "X-Repo-Commit": repo.sha, ETag: `"${file.oid}"` };
      if (file.lfs) {
        res.writeHead(302, {
          ...common,
          "X-Linked-Etag": `"${file.lfs.oid}"`,
          "X-Linked-Size": String(file.lfs.size),
          // To another host, as the Hub's CDN redirects are (huggingface_hub follows same-host redirects as renames).
          Location: `${this.cdnUrl}/lfs-blobs/${repo.kind}/${encodeURIComponent(repo.id)}/${file.lfs.oid}`,
        });
        return void res.end();
      }
      return this.sendBytes(req, res, file.bytes, common);
    }
    m = url.pathname.match(/^\/lfs-blobs\/(model|dataset)\/([^/]+)\/([0-9a-f]{64})$/);
    if (m) {
      const repo = this.repos.get(`${m[1]}:${decodeURIComponent(m[2]!)}`);
      const file = repo && [...repo.files.values()].find((f) => f.lfs?.oid === m![3]);
      if (!file) return notFound(res, "EntryNotFound", "no such blob");
      return this.sendBytes(req, res, file.bytes, { ETag: `"${file.lfs!.oid}"` });
    }
    notFound(res, "RepoNotFound", `no route ${path}`);
  }

  /** The repo when the request may read it at `revision`; else answers 401/404 and returns null. */
  private access(
    req: IncomingMessage,
    res: ServerResponse,
    kind: "model" | "dataset",
    id: string,
    revision: string,
  ): HubRepo | null {
    const repo = this.repos.get(`${kind}:${id}`);
    if (!repo) {
      notFound(res, "RepoNotFound", `Repository Not Found for url: ${req.url}.`);
      return null;
    }
    if (repo.gated) {
      const token = req.headers.authorization?.replace(/^Bearer\s+/i, "");
      if (!token || !this.tokens.has(token)) {
        res.writeHead(401, { "Content-Type": "application/json", "X-Error-Code": "GatedRepo" });
        res.end(
          JSON.stringify({
            error: `Access to model ${id} is restricted. You must have access to it and be authenticated to access it. Please log in.`,
          }),
        );
        return null;
      }
    }
    if (revision !== repo.sha && !repo.refs.has(revision)) {
      notFound(res, "RevisionNotFound", `Invalid rev id: ${revision}`);
      return null;
    }
    return repo;
  }

  private async sendBytes(
    req: IncomingMessage,
    res: ServerResponse,
    bytes: Buffer,
    headers: Record<string, string>,
  ): Promise<void> {
    let start = 0;
    let end = bytes.length - 1;
    let status = 200;
    const range = req.headers.range?.match(/^bytes=(\d+)-(\d*)$/);
    if (range) {
      start = Number(range[1]);
      if (range[2]) end = Math.min(end, Number(range[2]));
      if (start >= bytes.length || start > end) {
        res.writeHead(416, { "Content-Range": `bytes */${bytes.length}` });
        return void res.end();
      }
      status = 206;
    }
    const body = bytes.subarray(start, end + 1);
    res.writeHead(status, {
      ...headers,
      "Content-Type": "application/octet-stream",
      "Content-Length": String(body.length),
      "Accept-Ranges": "bytes",
      ...(status === 206 ? { "Content-Range": `bytes ${start}-${end}/${bytes.length}` } : {}),
    });
    if (req.method === "HEAD") return void res.end();
    // Only bodies longer than the cut are cut (not small files nor bytes=0-0 probes).
    const cut = this.cut && body.length > this.cut.afterBytes ? this.cut : null;
    if (cut && --cut.times <= 0) this.cut = null;
    const limit = cut ? Math.min(cut.afterBytes, body.length) : body.length;
    for (let at = 0; at < limit; at += 65536) {
      const chunk = body.subarray(at, Math.min(limit, at + 65536));
      if (!res.write(chunk)) await new Promise((resolve) => res.once("drain", resolve));
      if (this.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, this.chunkDelayMs));
      if (res.destroyed) return;
    }
    if (cut) {
      // Let the bytes reach the client, then break the connection mid-body.
      await new Promise((resolve) => setTimeout(resolve, 50));
      res.destroy();
      return;
    }
    res.end();
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

function notFound(res: ServerResponse, code: string, message: string): void {
  res.writeHead(404, { "Content-Type": "application/json", "X-Error-Code": code });
  res.end(JSON.stringify({ error: message }));
}
