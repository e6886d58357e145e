// The server's side of the inference process: forks it on first use, sends it
// requests and turns its replies back into the engine's Generator shapes. When
// the process dies (a native crash, out of memory), the reason is logged, the
// requests in flight fail with 503 inference_unavailable, and the next request
// starts a fresh process.
import { EngineError, type EngineErrorCode, type GenerationChunk, type GenerationResult } from "@svc/engine";
import { ApiError } from "../http/api-error.js";
import { type EngineProcess, forkEngineProcess } from "../process/engine-process.js";
import type {
  ChatGeneration,
  GenerationTarget,
  InferenceCommand,
  InferenceReply,
  PromptLimits,
} from "./inference-protocol.js";

/** A reply, or word that the process died with the request in flight. */
type Delivery = InferenceReply | { type: "gone"; message: string };

// Engine errors that mean the request itself cannot be served: 400 with the engine's code.
const REQUEST_ERRORS: ReadonlySet<string> = new Set<EngineErrorCode>([
  "invalid_argument",
  "context_length_exceeded",
]);

function errorOf(delivery: Extract<Delivery, { type: "error" | "gone" }>): Error {
  if (delivery.type === "gone") return new ApiError(503, "inference_unavailable", delivery.message);
  if (delivery.code && REQUEST_ERRORS.has(delivery.code))
    return new ApiError(400, delivery.code, delivery.message);
  return delivery.code
    ? new EngineError(delivery.code as EngineErrorCode, delivery.message)
    : new Error(delivery.message);
}

export class InferenceHost {
  private current: EngineProcess | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, (delivery: Delivery) => void>();
  /** Prompt limits per model folder (see prepare). */
  private readonly limits = new Map<string, PromptLimits>();
  private closed = false;

  /** The process id of the running inference process, if one runs. */
  get pid(): number | null {
    return this.current?.pid ?? null;
  }

  private process(): EngineProcess {
    if (this.closed) throw new ApiError(503, "inference_unavailable", "the server is shutting down");
    if (this.current) return this.current;
    const proc = forkEngineProcess(new URL("./inference-process.js", import.meta.url), "[inference]");
    console.log(`svc server: inference runs in process ${proc.pid}`);
    proc.child.on("message", (reply: InferenceReply) => this.pending.get(reply.id)?.(reply));
    void proc.exited.then((exit) => {
      if (this.current === proc) this.current = null;
      if (this.closed) return;
      console.error(
        `svc server: the inference process ${proc.pid} ${exit.reason}; ${this.pending.size} request(s) in flight failed, the next request starts a new process`,
      );
      const message = `the inference process ${exit.reason} while this request ran; retry the request`;
      for (const deliver of [...this.pending.values()]) deliver({ type: "gone", message });
    });
    this.current = proc;
    return proc;
  }

  /** Sends a command whose replies go to `deliver` until the caller calls the returned release. */
  private open(command: (id: number) => InferenceCommand, deliver: (d: Delivery) => void) {
    const id = this.nextId++;
    this.pending.set(id, deliver);
    const proc = this.process();
    proc.send(command(id));
    return { id, proc, release: () => this.pending.delete(id) };
  }

  /**
   * The model's prompt limits. The first request for a model folder asks the
   * process, which loads the model and adapter (a load error rejects here);
   * the limits depend on the folder alone, so later requests skip the round
   * trip (their generation loads an adapter it lacks, and a load error then
   * still comes before any response header: the first result is awaited first).
   */
  prepare(target: GenerationTarget): Promise<PromptLimits> {
    const known = this.limits.get(target.modelDir);
    if (known) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      const { release } = this.open(
        (id) => ({ type: "prepare", id, ...target }),
        (delivery) => {
          release();
          if (delivery.type === "prepared") {
            this.limits.set(target.modelDir, delivery.limits);
            resolve(delivery.limits);
          } else if (delivery.type === "error" || delivery.type === "gone") reject(errorOf(delivery));
        },
      );
    });
  }

  /** Streams one generation; aborting `signal` stops it in the process. */
  async *generate(
    target: GenerationTarget,
    request: ChatGeneration,
    signal?: AbortSignal,
  ): AsyncGenerator<GenerationChunk, GenerationResult> {
    const queue: Delivery[] = [];
    let wake: (() => void) | null = null;
    const { id, proc, release } = this.open(
      (id) => ({ type: "generate", id, ...target, request }),
      (delivery) => {
        queue.push(delivery);
        wake?.();
      },
    );
    const abort = () => proc.send({ type: "abort", id } satisfies InferenceCommand);
    signal?.addEventListener("abort", abort, { once: true });
    if (signal?.aborted) abort();
    let settled = false;
    try {
      for (;;) {
        while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        const delivery = queue.shift() as Delivery;
        if (delivery.type === "chunk") yield delivery.chunk;
        else if (delivery.type === "result") {
          settled = true;
          return delivery.result;
        } else if (delivery.type === "error" || delivery.type === "gone") {
          settled = true;
          throw errorOf(delivery);
        }
      }
    } finally {
      // A consumer that stopped early: the generation stops too, freeing its batch slot.
      if (!settled) abort();
      release();
      signal?.removeEventListener("abort", abort);
    }
  }

  async complete(
    target: GenerationTarget,
    request: ChatGeneration,
    signal?: AbortSignal,
  ): Promise<GenerationResult> {
    const generation = this.generate(target, request, signal);
    for (;;) {
      const next = await generation.next();
      if (next.done) return next.value;
    }
  }

  /** Stops the process; requests after this fail with 503. */
  async close(): Promise<void> {
    this.closed = true;
    const proc = this.current;
    this.current = null;
    if (!proc) return;
    proc.kill("SIGTERM");
    await proc.exited;
  }
}
