// The one parser of a chat request's parameters, for the edge's
// /v1/chat/completions (OpenAI's snake_case names) and the cloud API's
// /v1/inference/chat (svc's camelCase names of the same parameters). Each
// parameter is honoured as OpenAI documents it, accepted where its meaning
// holds without storage (user, metadata, store: false), or refused with 400
// naming it; a key in no list is refused too (docs/api.md#chat-parameters).
// null means absent, as the OpenAI clients send it.
import { MAX_LOGIT_BIAS_ENTRIES } from "@svc/engine";
import { SAMPLING_RANGES, SEED_RANGE } from "@svc/wire";
import { type ApiError, badRequest } from "../http/api-error.js";
import {
  array,
  boolean,
  type Check,
  describe,
  inRange,
  number,
  object,
  optional,
  string,
} from "../http/validate.js";
import type { ChatParams } from "./chat-completions.js";
import {
  checkToolRequest,
  engineMessages,
  messagesCheck,
  responseFormatCheck,
  toolChoiceCheck,
  toolsCheck,
} from "./chat-request.js";

export type ChatDialect = "openai" | "svc";

/** Most completions one request may ask for (`n`). */
export const MAX_CHOICES = SAMPLING_RANGES.n.max;

/** "stop": a string or up to 4 strings. */
export const stopCheck: Check<string[]> = (value, path) =>
  typeof value === "string"
    ? [string({ min: 1 })(value, path)]
    : array(string({ min: 1 }), { max: 4 })(value, path);

/** logit_bias: token id (decimal) → a bias in [-100, 100]; whether each id is in the vocabulary is checked against the model. */
const logitBiasCheck: Check<Record<string, number>> = (value, path) => {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw badRequest(`"${path}" must be an object of token id → bias (got ${describe(value)})`);
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_LOGIT_BIAS_ENTRIES)
    throw badRequest(`"${path}" must have at most ${MAX_LOGIT_BIAS_ENTRIES} entries`);
  const bias: Record<string, number> = {};
  for (const [key, v] of entries) {
    if (!/^(0|[1-9]\d{0,8})$/.test(key))
      throw badRequest(`"${path}" keys must be token ids (decimal integers); got ${JSON.stringify(key)}`);
    bias[key] = number({ min: -100, max: 100 })(v, `${path}.${key}`);
  }
  return bias;
};

/** OpenAI's metadata: up to 16 string values, keys of at most 64 characters, values of at most 512. */
export const metadataCheck: Check<Record<string, string>> = (value, path) => {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw badRequest(`"${path}" must be an object of strings (got ${describe(value)})`);
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 16) throw badRequest(`"${path}" must have at most 16 keys`);
  for (const [key, v] of entries) {
    string({ min: 1, max: 64 })(key, `${path} key`);
    string({ max: 512 })(v, `${path}.${key}`);
  }
  return value as Record<string, string>;
};

/** A parameter svc serves no model for: refused naming it, with the reason. */
export const refused =
  (why: string): Check<never> =>
  (_value, path) => {
    throw badRequest(`"${path}" is not supported: ${why}`, "unsupported_parameter");
  };

const penalty = () => number(SAMPLING_RANGES.penalty);
// max_tokens and max_completion_tokens: "a positive integer", at most the range's max
const maxTokens = () => inRange(SAMPLING_RANGES.maxTokens);

/** The generation parameters both APIs take, by their OpenAI names (svc's names are their camelCase). */
const SHARED = {
  messages: messagesCheck,
  temperature: optional(number(SAMPLING_RANGES.temperature)),
  top_p: optional(number(SAMPLING_RANGES.topP)),
  max_tokens: optional(maxTokens()),
  stop: optional(stopCheck),
  seed: optional(inRange(SEED_RANGE)),
  stream: optional(boolean()),
  n: optional(number(SAMPLING_RANGES.n)),
  logprobs: optional(boolean()),
  top_logprobs: optional(number(SAMPLING_RANGES.topLogprobs)),
  frequency_penalty: optional(penalty()),
  presence_penalty: optional(penalty()),
  logit_bias: optional(logitBiasCheck),
  tools: optional(toolsCheck),
  tool_choice: optional(toolChoiceCheck),
  parallel_tool_calls: optional(boolean()),
  response_format: optional(responseFormatCheck),
};

/** What only the OpenAI format has: accepted with OpenAI's meaning, or refused naming the parameter. */
const OPENAI_ONLY = {
  model: optional(string()),
  max_completion_tokens: optional(maxTokens()),
  stream_options: optional(
    object({ include_usage: optional(boolean()), include_obfuscation: optional(boolean()) }),
  ),
  // Accepted, never stored: an end-user id and tags that only matter to stored completions.
  user: optional(string({ max: 512 })),
  safety_identifier: optional(string({ max: 512 })),
  prompt_cache_key: optional(string({ max: 1024 })),
  metadata: optional(metadataCheck),
  store: optional((value: unknown, path: string) =>
    value === true
      ? refused("svc does not store chat completions; send false or leave it out")(value, path)
      : boolean()(value, path),
  ),
  service_tier: optional((value: unknown, path: string) =>
    value === "auto" || value === "default"
      ? value
      : refused('every request is served alike; the tiers are "auto" and "default"')(value, path),
  ),
  modalities: optional((value: unknown, path: string) => {
    if (Array.isArray(value) && value.length === 1 && value[0] === "text") return value;
    return refused('svc serves text models; the only modalities are ["text"]')(value, path);
  }),
  audio: optional(refused("svc serves text models, which produce no audio")),
  prediction: optional(refused("svc does not implement predicted outputs")),
  reasoning_effort: optional(refused("svc's models have no reasoning-effort setting")),
  verbosity: optional(refused("svc's models have no verbosity setting")),
  web_search_options: optional(refused("svc's models do not search the web")),
  functions: optional(refused('the deprecated "functions" are not supported; use "tools"')),
  function_call: optional(refused('the deprecated "function_call" is not supported; use "tool_choice"')),
};

const camel = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** The parameters of each dialect by the names its requests use. */
const SHAPES: Record<ChatDialect, Record<string, Check<unknown>>> = {
  openai: { ...SHARED, ...OPENAI_ONLY },
  svc: Object.fromEntries(Object.entries(SHARED).map(([name, check]) => [camel(name), check])),
};

/** The names a dialect accepts (docs/api.md lists them; a test keeps the two alike). */
export function chatParameterNames(dialect: ChatDialect): string[] {
  return Object.keys(SHAPES[dialect]);
}

export interface ParsedChat {
  params: ChatParams;
  /** The dialect's own fields given in `extra` (the cloud API's adapter and baseModel), parsed. */
  extra: Record<string, unknown>;
}

/**
 * Parses a chat request body, with `extra` checks for the route's own fields,
 * and checks its tools and schemas (in slices: checkToolRequest). A refusal
 * is a 400 whose message starts with the parameter's name in quotes.
 */
export async function parseChatRequest(
  body: unknown,
  dialect: ChatDialect,
  extra: Record<string, Check<unknown>> = {},
): Promise<ParsedChat> {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest(`"body" must be a JSON object (got ${describe(body)})`);
  const present: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) if (value !== null) present[key] = value;
  const raw = object({ ...SHAPES[dialect], ...extra })(present, "") as Record<string, unknown>;
  const name = dialect === "openai" ? (n: string) => n : camel;
  const get = <T>(n: string) => raw[name(n)] as T | undefined;

  let maxTokens = get<number>("max_tokens");
  const newer = get<number>("max_completion_tokens");
  if (newer !== undefined) {
    if (maxTokens !== undefined && maxTokens !== newer)
      throw badRequest(
        `"max_completion_tokens" (${newer}) and "max_tokens" (${maxTokens}) disagree; send one of them`,
      );
    maxTokens = newer;
  }
  const logprobs = get<boolean>("logprobs") ?? false;
  const top = get<number>("top_logprobs");
  if (top !== undefined && !logprobs)
    throw badRequest(`"${name("top_logprobs")}" needs "${name("logprobs")}": true`);
  const streamOptions = get<{ include_usage?: boolean }>("stream_options");
  const stream = get<boolean>("stream") ?? false;
  if (streamOptions !== undefined && !stream)
    throw badRequest(`"stream_options" is only allowed when "stream" is true`);

  const tooling = {
    tools: get<ChatParams["tools"]>("tools"),
    toolChoice: get<ChatParams["toolChoice"]>("tool_choice"),
    parallelToolCalls: get<boolean>("parallel_tool_calls"),
    responseFormat: get<ChatParams["responseFormat"]>("response_format"),
  };
  await checkToolRequest(tooling, {
    tools: name("tools"),
    toolChoice: name("tool_choice"),
    responseFormat: name("response_format"),
  });
  const params: ChatParams = {
    ...tooling,
    toolsField: name("tools"),
    messages: engineMessages(get("messages") as Parameters<typeof engineMessages>[0]),
    temperature: get("temperature"),
    topP: get("top_p"),
    maxTokens,
    stop: get("stop"),
    seed: get("seed"),
    frequencyPenalty: get("frequency_penalty"),
    presencePenalty: get("presence_penalty"),
    logitBias: get("logit_bias"),
    logprobs: logprobs ? (top ?? 0) : undefined,
    logitBiasField: name("logit_bias"),
    n: get<number>("n") ?? 1,
    stream,
    // OpenAI streams usage only when asked, in a chunk of its own; svc's API on the last chunk.
    streamUsage: dialect === "svc" ? "last_chunk" : streamOptions?.include_usage ? "own_chunk" : "none",
    // As OpenAI: an explicit max_tokens that does not fit is refused; without one the completion fills what is left.
    maxTokensPolicy: maxTokens === undefined || dialect === "svc" ? undefined : "refuse",
  };
  const own = Object.fromEntries(Object.keys(extra).map((key) => [key, raw[key]]));
  return { params, extra: own };
}

/**
 * The parameter a 400 refuses, for the OpenAI error shape's `param`: svc's
 * refusals start with the field's path in quotes ("logit_bias.50", "messages[0].content").
 */
export function refusedParam(
  error: ApiError,
  parameters: readonly string[] = Object.keys(SHAPES.openai),
): string | null {
  if (error.status !== 400) return null;
  const path = /^"([^"]+)"/.exec(error.message)?.[1];
  if (path === undefined) return null;
  const top = /^[^.[]+/.exec(path)?.[0] ?? path;
  return parameters.includes(top) || error.message.endsWith("is not a known field") ? path : null;
}
