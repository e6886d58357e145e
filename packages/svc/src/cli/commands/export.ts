// svc export <job id | base model> [--checkpoint N] --format peft|merged|gguf
//   [--quant …] --out <path>: the server writes the export, the CLI downloads it.

import { exportModel } from "../../sdk/export.js";
import { openScopedSession } from "../../sdk/session.js";
import {
  type Command,
  intOption,
  oneOf,
  parse,
  requirePositional,
  stringOption,
  UsageError,
} from "../args.js";

const FORMATS = ["peft", "merged", "gguf"] as const;

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export const exportCommand: Command = {
  name: "export",
  summary: "write a job's adapter or a base model as PEFT, a merged folder or GGUF",
  usage: [
    "Usage: svc export <job id | base model> [--checkpoint N] --format peft|merged|gguf",
    "                  [--quant Q] --out <path>",
    "",
    "  <job id>          the job's final adapter, or with --checkpoint N its checkpoint at step N",
    "  <base model>      a base model the server serves (merged or gguf only)",
    "  --format peft     the adapter folder (adapter_config.json, adapter_model.safetensors)",
    "  --format merged   a Hugging Face folder with the adapter folded in (transformers, vLLM);",
    "                    --quant base (default: the base model's dtype) | f32 | f16 | bf16",
    "  --format gguf     a GGUF file for llama.cpp and an Ollama Modelfile beside it;",
    "                    --quant f16 (default) | q8_0 | q4_k_m",
    "  --out <path>      a folder (created), or for gguf a file name ending in .gguf",
    "",
    "See docs/exporting.md for running the result in llama.cpp, Ollama, vLLM and transformers.",
  ].join("\n"),
  async run(argv) {
    const { values, positionals } = parse(
      argv,
      {
        checkpoint: { type: "string" },
        format: { type: "string" },
        quant: { type: "string" },
        out: { type: "string" },
      },
      1,
    );
    const source = requirePositional(positionals, 0, "job id or base model");
    const format = oneOf(stringOption(values, "format"), "format", FORMATS);
    if (!format) throw new UsageError("--format is required (peft, merged or gguf)");
    const out = stringOption(values, "out");
    if (!out) throw new UsageError("--out is required");
    const { scoped } = await openScopedSession();
    let announced = false;
    let downloading = false;
    const result = await exportModel(scoped, {
      source,
      checkpoint: intOption(values, "checkpoint", 1),
      format,
      quant: stringOption(values, "quant"),
      out,
      onProgress: (p) => {
        if (p.stage === "exporting") {
          const step = p.server ? `${p.server.stage} ${p.server.done}/${p.server.total}` : "";
          const line = `Exporting ${source} as ${format} on the server… ${step}`.trimEnd();
          // a redrawn line on a terminal; the first line only otherwise
          if (process.stderr.isTTY) process.stderr.write(`\r${line}\x1b[K`);
          else if (!announced) process.stderr.write(`Exporting ${source} as ${format} on the server…\n`);
          announced = true;
          return;
        }
        if (announced && process.stderr.isTTY && !downloading) process.stderr.write("\n");
        downloading = true;
        const done = p.bytes === p.totalBytes;
        const line = `  ${p.file}  ${mib(p.bytes ?? 0)} / ${mib(p.totalBytes ?? 0)}`;
        // a redrawn line on a terminal; one line per finished file otherwise
        if (process.stderr.isTTY) process.stderr.write(`\r${line}${done ? "\n" : ""}`);
        else if (done) process.stderr.write(`${line}\n`);
      },
    });
    for (const warning of result.export.warnings) process.stderr.write(`warning: ${warning}\n`);
    const bytes = result.export.files.reduce((n, f) => n + f.bytes, 0);
    process.stdout.write(
      `Wrote ${result.files.length} files (${mib(bytes)}):\n${result.files.map((f) => `  ${f}`).join("\n")}\n`,
    );
    return 0;
  },
};
