// The inference process: a child of the server that holds the loaded models,
// adapters and generators (continuous batching across all requests) and runs
// every generation, so tokenization and the native kernels run off the
// server's event loop, and a native crash here cannot take the API or the
// edge down with it.
import { isEngineError } from "@svc/engine";
import { exitWithParent } from "../process/engine-process.js";
import { EnginePool } from "./engine-pool.js";
import type { GenerationTarget, InferenceCommand, InferenceReply } from "./inference-protocol.js";

exitWithParent();
const pool = new EnginePool({ idleReleaseMs: idleReleaseMs(), log: (line) => console.log(line) });
const running = new Map<number, AbortController>();
const reply = (message: InferenceReply) => process.send?.(message);

/** SVC_FORMAT_RELEASE_MS: how long a format may idle while its model serves in another (EnginePool). */
function idleReleaseMs(): number | undefined {
  const raw = process.env.SVC_FORMAT_RELEASE_MS;
  if (raw === undefined || raw === "") return undefined;
  const ms = Number(raw);
  if (!Number.isFinite(ms) || ms < 0) {
    console.error(
      `SVC_FORMAT_RELEASE_MS: expected milliseconds (a number >= 0), got "${raw}"; using the default`,
    );
    return undefined;
  }
  return ms;
}

function prepare(target: GenerationTarget) {
  return Promise.all([
    pool.model(target.modelDir, target.weightFormat),
    target.adapterDir ? pool.adapter(target.adapterDir) : null,
  ]);
}

function replyError(id: number, error: unknown) {
  const code = isEngineError(error) ? error.code : null;
  reply({ type: "error", id, message: (error as Error).message ?? String(error), code });
}

async function generate(command: Extract<InferenceCommand, { type: "generate" }>) {
  const controller = new AbortController();
  running.set(command.id, controller);
  let release = () => {};
  try {
    const [{ generator, tokenizer }, adapter] = await prepare(command);
    release = pool.hold(command.modelDir, command.weightFormat);
    const { messages, tools, ...options } = command.request;
    // With tools (or tool turns) the template renders them here; the generator renders plain chats itself.
    const rendered =
      tools !== undefined || messages.some((m) => m.role === "tool" || m.tool_calls !== undefined)
        ? {
            promptIds: tokenizer.encode(
              tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true, tools }),
            ),
          }
        : { messages };
    const generation = generator.generate({ ...options, ...rendered, adapter, signal: controller.signal });
    for (;;) {
      const next = await generation.next();
      if (next.done) {
        reply({ type: "result", id: command.id, result: next.value });
        break;
      }
      reply({ type: "chunk", id: command.id, chunk: next.value });
    }
  } catch (error) {
    replyError(command.id, error);
  } finally {
    release();
    running.delete(command.id);
  }
}

process.on("message", (command: InferenceCommand) => {
  switch (command.type) {
    case "prepare":
      prepare(command).then(
        ([{ generator, tokenizer }]) =>
          reply({
            type: "prepared",
            id: command.id,
            limits: {
              contextLength: generator.maxContext,
              maxTokenBytes: tokenizer.maxTokenBytes,
              toolSyntax: tokenizer.toolSyntax,
              vocabSize: tokenizer.vocabSize,
            },
          }),
        (error) => replyError(command.id, error),
      );
      return;
    case "generate":
      void generate(command);
      return;
    case "abort":
      running.get(command.id)?.abort();
      return;
  }
});
