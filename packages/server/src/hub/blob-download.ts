// Downloads one file into blobs/<etag>.incomplete and renames it into place.
// Written here rather than with @huggingface/hub's downloadFileToCacheDir
// because that function neither resumes (it fetches the whole file again
// after an interruption) nor reports bytes as they arrive; huggingface_hub
// (Python) does both, and so does this: a partial blob is continued with
// `Range: bytes=<size>-`, and each chunk is reported.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebReadableStream } from "node:stream/web";

export interface BlobSource {
  url: string;
  size: number;
  etag: string;
  /** sha256 for LFS files; the git blob sha1 otherwise (what the etag is). */
  hash: { algorithm: "sha256" | "git-sha1"; hex: string };
}

export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    url: string,
  ) {
    super(`HTTP ${status} from ${url}`);
  }
}

/** The bytes of a file hashed the way its etag was computed. */
async function fileHash(
  path: string,
  algorithm: BlobSource["hash"]["algorithm"],
  size: number,
): Promise<string> {
  const hash = createHash(algorithm === "sha256" ? "sha256" : "sha1");
  if (algorithm === "git-sha1") hash.update(`blob ${size}\0`);
  await pipeline(createReadStream(path), hash);
  return hash.digest("hex");
}

/**
 * Fetches `source` to `blobPath` (resuming `<blobPath>.incomplete`), calling
 * onBytes with the bytes on disk so far. A file whose bytes do not hash to its
 * etag is deleted and refused: a Hub or proxy that served other bytes must not
 * leave a wrong weight file in a cache other tools trust.
 */
export async function downloadBlob(
  source: BlobSource,
  blobPath: string,
  headers: Record<string, string>,
  onBytes: (done: number) => void,
  signal: AbortSignal,
): Promise<void> {
  const partial = `${blobPath}.incomplete`;
  let offset = (await stat(partial).catch(() => null))?.size ?? 0;
  if (offset > source.size) {
    await rm(partial, { force: true });
    offset = 0;
  }
  onBytes(offset);
  if (offset < source.size) {
    const response = await fetch(source.url, {
      headers: offset > 0 ? { ...headers, Range: `bytes=${offset}-` } : headers,
      redirect: "follow",
      signal,
    });
    if (response.status !== 200 && response.status !== 206) {
      await response.body?.cancel();
      throw new HttpStatusError(response.status, source.url);
    }
    // A server that ignores Range answers 200 with the whole file: start over.
    const start = response.status === 206 ? rangeStart(response.headers.get("content-range")) : 0;
    if (start !== offset && start !== 0) {
      await response.body?.cancel();
      throw new Error(`${source.url} answered a range from byte ${start}, not ${offset}`);
    }
    let done = start;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        done += chunk.length;
        onBytes(done);
        callback(null, chunk);
      },
    });
    if (!response.body) throw new Error(`${source.url} answered without a body`);
    await pipeline(
      Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
      counter,
      createWriteStream(partial, { flags: start === 0 ? "w" : "a" }),
      { signal },
    );
  }
  const size = (await stat(partial)).size;
  if (size !== source.size)
    throw new Error(`${source.url}: got ${size} bytes of ${source.size} (the connection ended early)`);
  const actual = await fileHash(partial, source.hash.algorithm, size);
  if (actual !== source.hash.hex) {
    await rm(partial, { force: true });
    throw new Error(
      `${source.url}: the bytes hash to ${actual}, not the ${source.hash.algorithm} ${source.hash.hex} the Hub lists; the partial file was deleted`,
    );
  }
  await rename(partial, blobPath);
}

function rangeStart(header: string | null): number {
  const match = header?.match(/^bytes (\d+)-/);
  return match ? Number(match[1]) : 0;
}
