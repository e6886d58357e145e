// What the chat answers of both forms (chat-completions.ts, chat-stream.ts)
// share: a choice's finish reason, logprobs and usage in OpenAI's shape, and
// how generations nobody will read are stopped.
import type { GenerationChunk, GenerationResult, TokenLogprob } from "@svc/engine";
import type { ChatFinishReason, ChatTokenLogprob } from "@svc/wire";

export const finishReason = (r: GenerationResult["finishReason"], called: boolean): ChatFinishReason =>
  r === "length" ? "length" : called ? "tool_calls" : "stop";

/** The engine's logprob of a token in OpenAI's shape. */
export const wireLogprob = (lp: TokenLogprob): ChatTokenLogprob => ({
  token: lp.token,
  logprob: lp.logprob,
  bytes: lp.bytes,
  top_logprobs: lp.topLogprobs.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
});

/** Usage as OpenAI counts it: the prompt once, the completion tokens of every choice. */
export function totalUsage(results: GenerationResult[]): GenerationResult {
  let completionTokens = 0;
  for (const r of results) completionTokens += r.completionTokens;
  return { ...results[0], completionTokens };
}

export const usageOf = (r: GenerationResult) => ({
  prompt_tokens: r.promptTokens,
  completion_tokens: r.completionTokens,
  total_tokens: r.promptTokens + r.completionTokens,
});

export type ChatStream = AsyncGenerator<GenerationChunk, GenerationResult>;

/** Stops generations that will not be read (their finally aborts them in the inference process). */
export async function abandon(generations: ChatStream[]): Promise<void> {
  await Promise.allSettled(generations.map((g) => g.return(undefined as never)));
}
