// A chat format as data: the text around each role's turn, as a family's
// published instruct models write it, so that an export can write the same
// turns as an Ollama template (export/modelfile.ts). Each family names its
// formats (Family.ollama); ChatML is here because models of several
// families write it (Qwen's, SmolLM's, Llama-architecture models such as the
// bundled one).

/** The text before and after a turn's content. */
export type Affixes = [string, string];

export interface ChatFormat {
  name: string;
  /** A marker this format's Jinja template contains (CHAT_FORMATS tries the formats in an order, most specific first). */
  marker: string;
  /** Templates that also contain this write more than the format's affixes (SmolLM3's system metadata): left to the GGUF's own template. */
  unless?: string;
  system: Affixes;
  user: Affixes;
  assistant: Affixes;
  stop: string[];
  /** The system text opens the first user turn instead of a turn of its own (Gemma). */
  systemJoinsUser?: boolean;
}

/** The affixes of a format whose three roles open the same way, with the role's name, and close alike. */
export function turns(
  open: (role: string) => string,
  close: string,
): Pick<ChatFormat, "system" | "user" | "assistant"> {
  return {
    system: [open("system"), close],
    user: [open("user"), close],
    assistant: [open("assistant"), close],
  };
}

export const CHATML: ChatFormat = {
  name: "ChatML",
  marker: "<|im_start|>",
  unless: "## Metadata",
  ...turns((role) => `<|im_start|>${role}\n`, "<|im_end|>\n"),
  stop: ["<|im_end|>", "<|im_start|>"],
};
