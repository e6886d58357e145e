// Streamed tool calls arrive as OpenAI's deltas: the first delta of a call
// carries its index, id and function name, the ones after it pieces of the
// arguments. The SDK's streaming infer hands each call over whole, once the
// stream has moved past it.
import type { ToolCall, ToolCallDelta } from "@svc/wire";

export class ToolCallAssembler {
  private readonly open = new Map<number, ToolCall>();

  constructor(private readonly onCall?: (call: ToolCall) => void) {}

  add(delta: ToolCallDelta): void {
    let call = this.open.get(delta.index);
    if (!call) {
      // Calls stream one after another: a new index means the ones before it are whole.
      for (const index of [...this.open.keys()]) if (index < delta.index) this.flush(index);
      call = {
        id: delta.id ?? "",
        type: "function",
        function: { name: delta.function.name ?? "", arguments: "" },
      };
      this.open.set(delta.index, call);
    }
    call.function.arguments += delta.function.arguments ?? "";
  }

  /** Hands over every call still open (the stream ended). */
  finish(): void {
    for (const index of [...this.open.keys()].sort((a, b) => a - b)) this.flush(index);
  }

  private flush(index: number): void {
    const call = this.open.get(index);
    this.open.delete(index);
    if (call) this.onCall?.(call);
  }
}
