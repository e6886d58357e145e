// The base models this server serves: every folder with a config.json in the
// repository's bundled models/ folder (named svc/<folder>), plus models given
// with --model <name>=<dir>. What a model is (family, architecture, size,
// context, LoRA targets) is the engine's reading of its config.json; a folder
// the engine cannot read stops the server with the engine's reason.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loraModulesOf, type ModelConfig, parameterCount, readModelConfig } from "@svc/engine";
import type { BaseModelInfo } from "../wire.js";

export interface RegisteredModel {
  info: BaseModelInfo;
  dir: string;
  config: ModelConfig;
}

/** <repo>/models, found from this file's place in packages/server/dist/src/models/. */
export const BUNDLED_MODELS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../../models");

export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

/** The first sentence of a model card line, at most 200 characters. */
function firstSentence(line: string): string {
  const plain = line.replace(/[*_`]/g, "");
  const end = plain.search(/[.!?](\s|$)/);
  const sentence = end >= 0 ? plain.slice(0, end + 1) : plain;
  return sentence.length > 200 ? `${sentence.slice(0, 197)}...` : sentence;
}

/** Bytes of the files directly in a model folder (following symlinks, as a Hub snapshot's are). */
export function folderBytes(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir)) {
    const stats = statSync(join(dir, entry), { throwIfNoEntry: false });
    if (stats?.isFile()) bytes += stats.size;
  }
  return bytes;
}

/** `origin` says where the model was named, e.g. "--model me/x=/models/x", in the error a folder the engine cannot read gives. */
function describeModel(
  name: string,
  dir: string,
  origin: string,
  source: BaseModelInfo["source"],
): RegisteredModel {
  let config: ModelConfig;
  try {
    config = readModelConfig(dir);
  } catch (error) {
    throw new Error(`${origin}: ${(error as Error).message}`);
  }
  let description = `${config.architecture} model from ${dir}`;
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
    config,
    info: {
      name,
      family: config.family,
      architecture: config.architecture,
      parameters: parameterCount(config),
      contextLength: config.maxPositionEmbeddings,
      loraTargets: loraModulesOf(config).map((m) => m.name),
      description,
      source,
      cached: true,
      revision: null,
      sizeBytes: folderBytes(dir),
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
          const name = `svc/${entry.name}`;
          const origin = `bundled model ${name} (${dir}; svc server --bundled-models none serves none)`;
          this.models.set(name, describeModel(name, dir, origin, "bundled"));
        }
      }
    }
    for (const { name, dir } of options.extra ?? []) {
      if (!MODEL_NAME_PATTERN.test(name))
        throw new Error(`--model ${name}=${dir}: the name must look like <org>/<model>`);
      if (!existsSync(join(dir, "config.json")))
        throw new Error(`--model ${name}=${dir}: no config.json in ${dir}`);
      this.models.set(name, describeModel(name, resolve(dir), `--model ${name}=${dir}`, "local"));
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
