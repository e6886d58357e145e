// An Ollama Modelfile beside a GGUF file: FROM the file, the chat format as
// an Ollama (Go text/template) TEMPLATE, and the end-of-turn markers as stop
// parameters. The format is recognised from the model's Jinja chat template
// by the markers each family's format writes; for a template it does not
// recognise, TEMPLATE is left out and Ollama reads tokenizer.chat_template
// from the GGUF metadata itself.

/** The text before and after a turn's content. */
type Affixes = [string, string];

export interface ChatFormat {
  name: string;
  /** A marker only this format's Jinja template contains. */
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
function turns(
  open: (role: string) => string,
  close: string,
): Pick<ChatFormat, "system" | "user" | "assistant"> {
  return {
    system: [open("system"), close],
    user: [open("user"), close],
    assistant: [open("assistant"), close],
  };
}

const FORMATS: ChatFormat[] = [
  {
    name: "ChatML",
    marker: "<|im_start|>",
    unless: "## Metadata",
    ...turns((role) => `<|im_start|>${role}\n`, "<|im_end|>\n"),
    stop: ["<|im_end|>", "<|im_start|>"],
  },
  {
    name: "Llama 3",
    marker: "<|start_header_id|>",
    ...turns((role) => `<|start_header_id|>${role}<|end_header_id|>\n\n`, "<|eot_id|>"),
    stop: ["<|eot_id|>", "<|start_header_id|>"],
  },
  {
    name: "Gemma",
    marker: "<start_of_turn>",
    // Gemma has no system role: its template puts the system text at the start of the first user turn
    system: ["<start_of_turn>user\n", "\n\n"],
    user: ["<start_of_turn>user\n", "<end_of_turn>\n"],
    assistant: ["<start_of_turn>model\n", "<end_of_turn>\n"],
    stop: ["<end_of_turn>"],
    systemJoinsUser: true,
  },
  {
    name: "Granite",
    marker: "<|start_of_role|>",
    ...turns((role) => `<|start_of_role|>${role}<|end_of_role|>`, "<|end_of_text|>\n"),
    stop: ["<|end_of_text|>", "<|start_of_role|>"],
  },
  {
    name: "Phi-4",
    marker: "'<|' + message['role'] + '|>'",
    ...turns((role) => `<|${role}|>`, "<|end|>"),
    stop: ["<|end|>", "<|user|>", "<|assistant|>"],
  },
  {
    name: "Phi-3",
    marker: "<|end|>",
    ...turns((role) => `<|${role}|>\n`, "<|end|>\n"),
    stop: ["<|end|>", "<|user|>", "<|assistant|>"],
  },
  {
    name: "OLMo 2",
    marker: "<|user|>",
    system: ["<|system|>\n", "\n"],
    user: ["<|user|>\n", "\n"],
    assistant: ["<|assistant|>\n", "<|endoftext|>\n"],
    stop: ["<|endoftext|>", "<|user|>"],
  },
];

/** The chat format of a Jinja chat template, by its markers (null when none is known). */
export function chatFormatOf(template: string | null): ChatFormat | null {
  if (!template) return null;
  const format = FORMATS.find((f) => template.includes(f.marker));
  return format && !(format.unless && template.includes(format.unless)) ? format : null;
}

/**
 * The Go text/template Ollama renders. One line, no whitespace-trimming
 * markers: the text between actions is the format's affixes exactly (a "{{-"
 * would also eat the newlines they end with).
 */
export function ollamaTemplate(f: ChatFormat): string {
  const userOpen = f.systemJoinsUser ? `{{ if ne $prev "system" }}${f.user[0]}{{ end }}` : f.user[0];
  return [
    f.systemJoinsUser ? '{{ $prev := "" }}' : "",
    "{{ range $i, $_ := .Messages }}",
    "{{ $last := eq (len (slice $.Messages $i)) 1 }}",
    `{{ if eq .Role "system" }}${f.system[0]}{{ .Content }}${f.system[1]}`,
    `{{ else if eq .Role "user" }}${userOpen}{{ .Content }}${f.user[1]}`,
    `{{ else if eq .Role "assistant" }}${f.assistant[0]}{{ .Content }}{{ if not $last }}${f.assistant[1]}{{ end }}`,
    "{{ end }}",
    `{{ if and (ne .Role "assistant") $last }}${f.assistant[0]}{{ end }}`,
    f.systemJoinsUser ? "{{ $prev = .Role }}" : "",
    "{{ end }}",
  ].join("");
}

/** The Modelfile text for `ggufFile` (a path relative to the Modelfile). */
export function modelfile(ggufFile: string, chatTemplate: string | null): string {
  const format = chatFormatOf(chatTemplate);
  const lines = [`FROM ./${ggufFile}`, ""];
  if (format) {
    lines.push(`# Chat format: ${format.name} (from the model's chat template)`);
    lines.push(`TEMPLATE """${ollamaTemplate(format)}"""`, "");
    for (const stop of format.stop) lines.push(`PARAMETER stop ${JSON.stringify(stop)}`);
  } else {
    lines.push(
      "# The chat format was not recognised: Ollama reads tokenizer.chat_template from the GGUF file.",
    );
  }
  return `${lines.join("\n")}\n`;
}
