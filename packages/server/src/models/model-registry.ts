// The base models this server serves: every folder with a config.json in the
// repository's bundled models/ folder (named svc/<folder>), plus models given
// with --model <name>=<dir>.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { BaseModelInfo } from "../wire.js";

export interface RegisteredModel {
  info: BaseModelInfo;
  dir: string;
}

/** <repo>/models, found from this file's place in packages/server/dist/src/models/. */
export const BUNDLED_MODELS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../../models");

export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

/** Parameter count of a Llama config (embeddings, attention, MLP, norms, untied head). */
function llamaParameters(config: Record<string, unknown>): number {
  const n = (key: string, fallback = 0) =>
    typeof config[key] === "number" ? (config[key] as number) : fallback;
  const hidden = n("hidden_size");
  const heads = n("num_attention_heads", 1);
  const kvHeads = n("num_key_value_heads", heads);
  const headDim = n("head_dim", hidden / heads);
  const vocab = n("vocab_size");
  const layers = n("num_hidden_layers");
  const inter = n("intermediate_size");
  const attention = hidden * heads * headDim * 2 + hidden * kvHeads * headDim * 2;
  const mlp = 3 * hidden * inter;
  const perLayer = attention + mlp + 2 * hidden;
  const head = config.tie_word_embeddings === true ? 0 : vocab * hidden;
  return vocab * hidden + layers * perLayer + hidden + head;
}

/** The first sentence of a model card line, at most 200 characters. */
function firstSentence(line: string): string {
  const plain = line.replace(/[*_`]/g, "");
  const end = plain.search(/[.!?](\s|$)/);
  const sentence = end >= 0 ? plain.slice(0, end + 1) : plain;
  return sentence.length > 200 ? `${sentence.slice(0, 197)}...` : sentence;
}

function describeModel(name: string, dir: string): RegisteredModel {
  const configPath = join(dir, "config.json");
  const config = JSON.parse(readFileSync(configPath, "utf8")) as Record<string, unknown>;
  let description = `Llama-architecture model from ${dir}`;
  const readme = join(dir, "README.md");
  if (existsSync(readme)) {
    const line = readFileSync(readme, "utf8")
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "" && !l.startsWith("#") && !l.startsWith("---"));
    if (line) description = firstSentence(line);
  }
  return {
    dir,
    info: {
      name,
      parameters: llamaParameters(config),
      contextLength:
        typeof config.max_position_embeddings === "number" ? config.max_position_embeddings : 2048,
      description,
    },
  };
}

export class ModelRegistry {
  private readonly models = new Map<string, RegisteredModel>();

  constructor(options: { bundledDir?: string | null; extra?: { name: string; dir: string }[] }) {
    const bundled = options.bundledDir === undefined ? BUNDLED_MODELS_DIR : options.bundledDir;
    if (bundled && existsSync(bundled)) {
      for (const entry of readdirSync(bundled, { withFileTypes: true })) {
        const dir = join(bundled, entry.name);
        if (entry.isDirectory() && existsSync(join(dir, "config.json"))) {
          this.models.set(`svc/${entry.name}`, describeModel(`svc/${entry.name}`, dir));
        }
      }
    }
    for (const { name, dir } of options.extra ?? []) {
      if (!MODEL_NAME_PATTERN.test(name))
        throw new Error(`--model ${name}=${dir}: the name must look like <org>/<model>`);
      if (!existsSync(join(dir, "config.json")))
        throw new Error(`--model ${name}=${dir}: no config.json in ${dir}`);
      this.models.set(name, describeModel(name, resolve(dir)));
    }
  }

  list(): BaseModelInfo[] {
    return [...this.models.values()].map((m) => m.info);
  }

  get(name: string): RegisteredModel | undefined {
    return this.models.get(name);
  }

  names(): string[] {
    return [...this.models.keys()];
  }
}
