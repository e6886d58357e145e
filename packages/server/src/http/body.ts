// Request bodies with a size limit: a declared Content-Length over the limit
// is refused before reading, and a body that grows past it while streaming is
// cut off. Malformed JSON, or bytes that are not UTF-8, is a 400 "invalid_json";
// a JSON string anywhere in the body holding a lone surrogate is a 400 naming its field.
import type { Context } from "hono";
import { ApiError, badRequest } from "./api-error.js";
import { refuseLoneSurrogates } from "./validate.js";

export const JSON_BODY_LIMIT = 1024 * 1024;

const tooLarge = (limit: number) =>
  new ApiError(413, "payload_too_large", `request body exceeds ${limit} bytes`);

export async function readBodyBytes(c: Context, limit: number): Promise<Buffer> {
  const declared = Number(c.req.header("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  // On Node, read the IncomingMessage itself: asking Hono for the web Request
  // body would build a Request and a ReadableStream for every call.
  const incoming = (c.env as { incoming?: AsyncIterable<Buffer> } | undefined)?.incoming;
  const source: AsyncIterable<Uint8Array> | null =
    incoming ?? (c.req.raw.body as AsyncIterable<Uint8Array> | null);
  if (!source) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of source) {
      total += chunk.byteLength;
      if (total > limit) throw tooLarge(limit);
      chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    // A client that hangs up mid-body is no server failure: nothing to log, and nothing was stored.
    throw new ApiError(
      400,
      "body_incomplete",
      `the request body ended after ${total} bytes, before its end (the client disconnected)`,
    );
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The bytes as UTF-8 text, or null when they are not valid UTF-8 (Buffer.toString would replace bad bytes silently). */
export function utf8Text(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * A request header's value as the client wrote it: Node hands header bytes
 * over as latin1 characters, so UTF-8 text arrives garbled ("cafÃ©"). Bytes
 * that are not UTF-8 stay as latin1 characters.
 */
export function headerText(value: string): string {
  return /[\x80-\xff]/.test(value) ? (utf8Text(Buffer.from(value, "latin1")) ?? value) : value;
}

/** The 1-based line of the first byte sequence that is not UTF-8 (0 when all of it is). */
export function lineOfInvalidUtf8(bytes: Buffer): number {
  let line = 1;
  for (let start = 0; start < bytes.length; line++) {
    const newline = bytes.indexOf(10, start);
    const end = newline < 0 ? bytes.length : newline;
    if (utf8Text(bytes.subarray(start, end)) === null) return line;
    start = end + 1;
  }
  return 0;
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

export async function readJson(c: Context, limit = JSON_BODY_LIMIT): Promise<unknown> {
  const bytes = await readBodyBytes(c, limit);
  const text = utf8Text(bytes);
  if (text === null) throw badRequest("request body is not valid UTF-8 text", "invalid_json");
  if (text.trim() === "")
    throw new ApiError(400, "invalid_json", "request body is empty; expected a JSON object");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw badRequest(`request body is not valid JSON: ${(error as Error).message}`, "invalid_json");
  }
  // Strict UTF-8 cannot carry a surrogate, so only a \uD800-\uDFFF escape makes one: walk the body only then.
  if (SURROGATE_ESCAPE.test(text)) refuseLoneSurrogates(body);
  return body;
}
