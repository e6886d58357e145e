// The base models this server serves: every folder with a config.json in the
// repository's bundled models/ folder (named svc/<folder>), models given with
// --model <name>=<dir>, and Hugging Face Hub models (hub-models.ts) that are in
// the Hugging Face cache or that --hub-models lets jobs download. What a model is (family, architecture, size,
// context, LoRA targets) is the engine's reading of its config.json; a folder
// the engine cannot read stops the server with the engine's reason, except one
// whose architecture the engine does not implement at all: that one is read
// from its files for the torch backend's transformers + peft
// (transformers-only-model.ts) and is never served.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loraModulesOf, type ModelConfig, parameterCount, readModelConfig } from "@svc/engine";
import type { BaseModelInfo } from "@svc/wire";
import { parseHubName } from "../hub/index.js";
import { type HubModelEntry, HubModels } from "./hub-models.js";
import { HubModelPolicy } from "./hub-policy.js";
import { ModelPulls } from "./model-pulls.js";
import {
  engineImplements,
  readRawConfig,
  readTransformersOnlyModel,
  TRANSFORMERS_FALLBACK_SETTINGS,
  TRANSFORMERS_ONLY_FAMILY,
  type TransformersOnlyModel,
} from "./transformers-only-model.js";

/** A model the engine computes (config), or one only transformers trains (transformersOnly, config null). */
export type RegisteredModel = { info: BaseModelInfo; dir: string } & (
  | { config: ModelConfig; transformersOnly: null }
  | { config: null; transformersOnly: TransformersOnlyModel }
);

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
  const raw = readRawConfig(dir);
  if (raw && !engineImplements(raw)) return describeTransformersOnly(name, dir, origin, source, raw);
  let config: ModelConfig;
  try {
    config = readModelConfig(dir);
  } catch (error) {
    throw new Error(`${origin}: ${(error as Error).message}`);
  }
  return {
    dir,
    config,
    transformersOnly: null,
    info: {
      ...describeConfig(name, config, readmeLine(dir) ?? `${config.architecture} model from ${dir}`, source),
      sizeBytes: folderBytes(dir),
    },
  };
}

/** The first line of the folder's README.md that is text (not a heading or front matter), as a sentence. */
function readmeLine(dir: string): string | null {
  const readme = join(dir, "README.md");
  if (existsSync(readme)) {
    const line = readFileSync(readme, "utf8")
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "" && !l.startsWith("#") && !l.startsWith("---"));
    if (line) return firstSentence(line);
  }
  return null;
}

/**
 * A folder whose architecture the engine does not implement, described from
 * its files for transformers + peft; one transformers could not train either
 * (no weights, no tokenizer.json, ...) is refused with both reasons.
 */
function describeTransformersOnly(
  name: string,
  dir: string,
  origin: string,
  source: BaseModelInfo["source"],
  raw: Record<string, unknown>,
): RegisteredModel {
  let model: TransformersOnlyModel;
  try {
    model = readTransformersOnlyModel(dir, raw);
  } catch (error) {
    let engineReason = "svc's engine does not implement its architecture";
    try {
      readModelConfig(dir);
    } catch (engineError) {
      engineReason = (engineError as Error).message;
    }
    throw new Error(
      `${origin}: ${engineReason}; nor can the torch backend train it with transformers + peft: ${(error as Error).message}`,
    );
  }
  const description =
    readmeLine(dir) ??
    `${model.architecture} model from ${dir}, trained with transformers + peft only (${TRANSFORMERS_FALLBACK_SETTINGS})`;
  return {
    dir,
    config: null,
    transformersOnly: model,
    info: {
      name,
      family: TRANSFORMERS_ONLY_FAMILY,
      architecture: model.architecture,
      parameters: model.parameters,
      contextLength: model.contextLength,
      loraTargets: model.loraTargets,
      description,
      source,
      cached: true,
      revision: null,
      sizeBytes: folderBytes(dir),
    },
  };
}

/** What the engine's reading of a config.json says about a model, as GET /v1/models lists it. */
export function describeConfig(
  name: string,
  config: ModelConfig,
  description: string,
  source: BaseModelInfo["source"],
): BaseModelInfo {
  return {
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
    sizeBytes: null,
  };
}

export interface ModelRegistryOptions {
  bundledDir?: string | null;
  extra?: { name: string; dir: string }[];
  /** Which Hub models jobs may use (svc server --hub-models); default: those already cached. */
  hubPolicy?: HubModelPolicy;
}

export class ModelRegistry {
  private readonly models = new Map<string, RegisteredModel>();
  readonly hub: HubModels;
  /** Downloads of Hub models started through the API (POST /v1/models/pull) or by a request to serve one. */
  readonly pulls: ModelPulls;
  /** Hub snapshots described once: a snapshot folder (named by its commit) never changes. */
  private readonly described = new Map<string, RegisteredModel>();

  constructor(options: ModelRegistryOptions) {
    this.hub = new HubModels(options.hubPolicy ?? new HubModelPolicy());
    this.pulls = new ModelPulls(this.hub);
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

  /** Bundled and local models, then the Hub models in the cache that the policy lets jobs use. */
  list(): BaseModelInfo[] {
    const hub: BaseModelInfo[] = [];
    for (const { name, entry } of this.hub.listCached()) {
      if (this.models.has(name)) continue;
      try {
        hub.push(this.describeHub(name, entry).info);
      } catch {
        // A cached model the engine cannot read is not offered; a job naming it gets the engine's reason.
      }
    }
    return [...[...this.models.values()].map((m) => m.info), ...hub];
  }

  /**
   * A bundled or local model, or a Hub model whose files are all in the cache
   * (and which the policy allows). Throws the engine's reason when a cached
   * Hub model's config.json cannot be read.
   */
  get(name: string): RegisteredModel | undefined {
    const registered = this.models.get(name);
    if (registered) return registered;
    const ref = parseHubName(name);
    if (!ref || !this.hub.policy.allowsUse(ref.repo)) return undefined;
    const entry = this.hub.cached(name);
    return entry ? this.describeHub(name, entry) : undefined;
  }

  /** Whether `name` is one of the bundled or --model models (never looked up on the Hub). */
  isRegistered(name: string): boolean {
    return this.models.has(name);
  }

  /** Names of the bundled, local and cached Hub models. */
  names(): string[] {
    return this.list().map((m) => m.name);
  }

  /** The 400's message for a model this server does not serve; `field` names the request field. */
  notServedMessage(name: string, field: string): string {
    const known = this.names();
    return `"${field}": base model ${JSON.stringify(name)} is not served here (${known.length ? `available: ${known.join(", ")}` : "no base models are registered"})`;
  }

  describeHub(name: string, entry: HubModelEntry): RegisteredModel {
    let model = this.described.get(`${name}\0${entry.dir}`);
    if (!model) {
      const described = describeModel(name, entry.dir, `Hub model ${name} (${entry.dir})`, "hub");
      const description = `${described.info.architecture} from the Hugging Face Hub, commit ${entry.revision.slice(0, 12)}${described.transformersOnly ? ` (transformers + peft only: ${TRANSFORMERS_FALLBACK_SETTINGS})` : ""}`;
      model = {
        ...described,
        info: { ...described.info, description, revision: entry.revision, sizeBytes: entry.bytes },
      };
      this.described.set(`${name}\0${entry.dir}`, model);
    }
    return model;
  }
}
