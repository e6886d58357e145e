// An Ollama Modelfile beside a GGUF file: FROM the file, the chat format as
// an Ollama (Go text/template) TEMPLATE, and the end-of-turn markers as stop
// parameters. The format is recognised from the model's Jinja chat template
// by the markers each family's format writes (the formats are the families'
// data: CHAT_FORMATS, families/index.ts); for a template it does not
// recognise, TEMPLATE is left out and Ollama reads tokenizer.chat_template
// from the GGUF metadata itself.
import { CHAT_FORMATS, type ChatFormat } from "../families/index.js";

export type { ChatFormat };

/** The chat format of a Jinja chat template, by its markers (null when none is known). */
export function chatFormatOf(template: string | null): ChatFormat | null {
  if (!template) return null;
  const format = CHAT_FORMATS.find((f) => template.includes(f.marker));
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
