// Forwards one chat-completions or Responses API request to the external
// server a deployment names, at the same route under its base URL
// (…/chat/completions, …/responses), and relays the answer as it arrives:
// status, JSON, or the SSE stream chunk by chunk. An upstream that does not
// serve the Responses API answers with its own error (often 404), relayed as
// it is (docs/server.md#forwarding-deployments-to-an-external-inference-server). The edge has already done auth, the enabled check and key
// accounting; the client's Authorization (a key of this deployment) stays
// here and the operator's key for the upstream goes instead. The request's
// "model" becomes the name the upstream serves the target under; every other
// field passes through untouched, so the upstream's own features (tools,
// response_format, logprobs, the Responses API's items) work. The tokens the upstream reports in its
// answer's `usage` go to the key's meter (none reported: 0 tokens).
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { Context } from "hono";
import { ApiError } from "../http/api-error.js";
import { nodeResponse } from "../inference/chat-completions.js";
import type { TokenMeter } from "./key-usage-recorder.js";
import { UpstreamUsageReader } from "./upstream-usage.js";
import { type Upstream, upstreamKeyVariable } from "./upstreams.js";

/** Response headers worth relaying; the body arrives already decoded, so no encoding or length headers. */
const RELAYED_HEADERS = ["content-type", "cache-control"];

/** The OpenAI routes a deployment serves, by their path under a base URL. */
export type ForwardedRoute = "chat/completions" | "responses";

export async function forwardToUpstream(
  c: Context,
  upstream: Upstream,
  route: ForwardedRoute,
  model: string,
  body: Record<string, unknown>,
  meter?: TokenMeter,
): Promise<Response> {
  const res = nodeResponse(c);
  const controller = new AbortController();
  // A client that hangs up cancels the upstream request too.
  const onClose = () => {
    if (!res.writableFinished) controller.abort();
  };
  res.once("close", onClose);
  let answer: Response;
  try {
    answer = await fetch(`${upstream.baseUrl}/${route}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: body.stream === true ? "text/event-stream" : "application/json",
        ...(upstream.apiKey ? { authorization: `Bearer ${upstream.apiKey}` } : {}),
      },
      body: JSON.stringify({ ...body, model }),
      signal: controller.signal,
    });
  } catch (error) {
    const reason = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new ApiError(502, "upstream_unavailable", `upstream ${upstream.name} did not answer (${reason})`);
  }
  if (answer.status === 401 || answer.status === 403) {
    await answer.body?.cancel();
    throw new ApiError(
      502,
      "upstream_auth_failed",
      `upstream ${upstream.name} refused this server's credentials (HTTP ${answer.status}); its operator sets the key in ${upstreamKeyVariable(upstream.name)}`,
    );
  }
  const headers: Record<string, string> = {};
  for (const name of RELAYED_HEADERS) {
    const value = answer.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  res.writeHead(answer.status, headers);
  const usage = new UpstreamUsageReader(answer.headers.get("content-type"));
  try {
    for await (const chunk of answer.body ?? []) {
      usage.push(chunk);
      if (res.destroyed) break;
      if (!res.write(chunk))
        await new Promise<void>((resolve) => {
          res.once("drain", resolve);
          res.once("close", resolve);
        });
    }
  } catch {
    // The upstream broke off mid-answer or the client left: end what was sent.
  } finally {
    res.off("close", onClose);
    const reported = usage.finish();
    meter?.(reported?.promptTokens ?? 0, reported?.completionTokens ?? 0);
  }
  res.end();
  return RESPONSE_ALREADY_SENT;
}
