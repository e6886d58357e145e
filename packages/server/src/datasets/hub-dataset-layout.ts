// Which files of a Hub dataset repository hold one split, read from the file
// names the way the Hub's automatic layout names them (its "File names and
// splits" guide; the `datasets` library's default patterns), so a dataset
// pushed with `push_to_hub`, the Hub's own Parquet conversion and a folder of
// `train.jsonl`/`test.jsonl` files all work without a loading script:
//
// - data files are `.parquet`, `.jsonl` and `.json` (case-insensitive); files
//   and folders whose names start with ".", and save_to_disk's metadata
//   (dataset_info.json, state.json, ...), are not data;
// - `config` names a top-level folder (`<config>/...`, as the Hub's Parquet
//   conversion lays out `<config>/<split>/0000.parquet`) or a folder under
//   `data/` (`data/<config>/train-00000-of-00001.parquet`); "default" with no
//   such folder means the whole repository; files in several config folders
//   need a config named;
// - a file's split is, in this order:
//   1. the name before `-NNNNN-of-NNNNN` (push_to_hub's `data/train-00000-of-00001.parquet`);
//   2. the folder of a file named only by digits (`default/train/0000.parquet`);
//   3. a folder, then the file name, holding a split keyword between
//      separators (`-`, `_`, `.`, space, digits, `/`, or either end):
//      train/training → "train", validation/valid/val/dev → "validation",
//      test/testing/eval/evaluation → "test";
// - when no data file has a split, every file is "train";
// - a split's files are read in natural path order (shard 2 before shard 10).
// A README.md whose front matter declares `configs:` (hub-dataset-readme.ts)
// decides instead: its config's split is the files its patterns match.
import { badRequest } from "../http/api-error.js";
import { globRegex, type ReadmeConfig } from "./hub-dataset-readme.js";

export const DATA_FILE_EXTENSIONS = [".parquet", ".jsonl", ".json"] as const;
/** The files `save_to_disk` and older Hub tooling write beside the data: metadata, not rows. */
const METADATA_FILES = new Set([
  "dataset_info.json",
  "dataset_infos.json",
  "dataset_dict.json",
  "state.json",
]);
/** How an error names the formats: ".parquet, .jsonl and .json". */
export const DATA_FILE_FORMATS = `${DATA_FILE_EXTENSIONS.slice(0, -1).join(", ")} and ${DATA_FILE_EXTENSIONS.at(-1)}`;

/** The Hub's split keywords, by the split they name. */
const SPLIT_KEYWORDS: Record<string, readonly string[]> = {
  train: ["train", "training"],
  validation: ["validation", "valid", "val", "dev"],
  test: ["test", "testing", "eval", "evaluation"],
};

const SEPARATOR = "[-._ 0-9]";
const SHARD_NAME = /^(.+?)-\d+-of-\d+\.[^/]+$/;
const DIGITS_NAME = /^\d+\.[^/]+$/;

/** A split name as the Hub's keywords canonicalise it ("valid" → "validation"); others as they are. */
export function canonicalSplit(split: string): string {
  const lower = split.toLowerCase();
  for (const [name, keywords] of Object.entries(SPLIT_KEYWORDS)) if (keywords.includes(lower)) return name;
  return split;
}

export function isDataFile(path: string): boolean {
  const lower = path.toLowerCase();
  const segments = path.split("/");
  if (segments.some((segment) => segment.startsWith("."))) return false;
  if (METADATA_FILES.has(segments[segments.length - 1].toLowerCase())) return false;
  return DATA_FILE_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

/** The canonical split a keyword between separators names in `text`, or null. */
function keywordSplit(text: string): string | null {
  const lower = text.toLowerCase();
  for (const [name, keywords] of Object.entries(SPLIT_KEYWORDS)) {
    for (const keyword of keywords) {
      if (new RegExp(`(^|${SEPARATOR})${keyword}(${SEPARATOR}|$)`).test(lower)) return name;
    }
  }
  return null;
}

/** The split a data file (path relative to the config folder) belongs to, or null when its name says none. */
export function splitOfFile(path: string): string | null {
  const segments = path.split("/");
  const name = segments[segments.length - 1];
  const shard = SHARD_NAME.exec(name);
  if (shard) return canonicalSplit(shard[1]);
  if (DIGITS_NAME.test(name) && segments.length >= 2) return canonicalSplit(segments[segments.length - 2]);
  for (const folder of segments.slice(0, -1)) {
    const split = keywordSplit(folder);
    if (split) return split;
  }
  return keywordSplit(name);
}

const naturalOrder = (a: string, b: string) => a.localeCompare(b, "en", { numeric: true });

/** Lists names for an error message: `"a", "b"`, the first `max` and a count of the rest. */
export function listNames(names: readonly string[], max = 20): string {
  const shown = names.slice(0, max).map((n) => `"${n}"`);
  return names.length > max ? `${shown.join(", ")} and ${names.length - max} more` : shown.join(", ");
}

/**
 * The config a data file belongs to and the folder that holds it: its
 * top-level folder, or the folder under `data/` (`data/<config>/train-*.parquet`),
 * unless that folder names a split; null for files outside any config folder.
 */
function configOf(path: string): { name: string; prefix: string } | null {
  const segments = path.split("/");
  const at = segments[0] === "data" && segments.length >= 3 ? 1 : 0;
  if (segments.length - 1 <= at) return null;
  const name = segments[at];
  if (name === "data" || keywordSplit(name) !== null) return null;
  return { name, prefix: `${segments.slice(0, at + 1).join("/")}/` };
}

/** The repository's configs: folder name → the prefix of its files. */
function configFolders(dataFiles: readonly string[]): Map<string, string> {
  const folders = new Map<string, string>();
  for (const path of dataFiles) {
    const config = configOf(path);
    if (config && !folders.has(config.name)) folders.set(config.name, config.prefix);
  }
  return new Map([...folders].sort(([a], [b]) => naturalOrder(a, b)));
}

export interface SplitSelection {
  /** The split's files, paths relative to the repository root, in reading order. */
  files: string[];
  /** The config folder the files were read from, or null for the whole repository. */
  config: string | null;
  /** Every split the config has (what the error for a missing split lists). */
  splits: string[];
}

/**
 * The files of `split` (of `config`) among the repository's `paths`, or a 400
 * naming what the repository has instead. `label` names the dataset in messages.
 */
export function selectSplitFiles(
  paths: readonly string[],
  request: { split: string; config?: string; label: string },
  readme: readonly ReadmeConfig[] | null = null,
): SplitSelection {
  if (readme) return selectFromReadme(paths, request, readme);
  const dataFiles = paths.filter(isDataFile).sort(naturalOrder);
  const { label } = request;
  if (dataFiles.length === 0) {
    const shown = paths.length === 0 ? "it has no files" : `its files: ${listNames([...paths].sort())}`;
    throw badRequest(
      `${label}: no data files (svc reads ${DATA_FILE_FORMATS} files; ${shown})`,
      "hub_dataset_no_data",
    );
  }
  const folders = configFolders(dataFiles);
  const configs = [...folders.keys()];
  let config: string | null = null;
  if (request.config !== undefined && (request.config !== "default" || configs.includes("default"))) {
    if (!configs.includes(request.config))
      throw badRequest(
        `${label}: no config "${request.config}" (a top-level folder of data files); ` +
          (configs.length > 0 ? `configs found: ${listNames(configs)}` : "the dataset has a single config"),
        "hub_dataset_config_not_found",
      );
    config = request.config;
  } else if (request.config === undefined && configs.length > 1) {
    throw badRequest(
      `${label}: the dataset has several configs (${listNames(configs)}); name one with "config"`,
      "hub_dataset_config_required",
    );
  } else if (request.config === undefined && configs.length === 1) {
    // One config folder holding every data file (the Hub's Parquet conversion of a single-config dataset).
    if (dataFiles.every((path) => path.startsWith(folders.get(configs[0])!))) config = configs[0];
  }

  const prefix = config === null ? "" : folders.get(config)!;
  const inConfig = dataFiles.filter((path) => path.startsWith(prefix));
  const relative = (path: string) => path.slice(prefix.length);
  const splitOf = new Map(inConfig.map((path) => [path, splitOfFile(relative(path))]));
  const anySplit = [...splitOf.values()].some((split) => split !== null);
  const fileSplit = (path: string) => (anySplit ? splitOf.get(path) : "train");
  const splits = [...new Set(inConfig.map(fileSplit).filter((s): s is string => !!s))].sort(naturalOrder);
  const wanted = canonicalSplit(request.split);
  const files = inConfig.filter((path) => fileSplit(path) === wanted);
  if (files.length === 0) {
    const where = config === null ? "" : ` in config "${config}"`;
    throw badRequest(
      `${label}: no split "${request.split}"${where}; splits found: ${listNames(splits)} (files: ${listNames(inConfig, 10)})`,
      "hub_dataset_split_not_found",
    );
  }
  return { files, config, splits };
}

/** The README's choice of config: the one named, else the one marked default, else "default", else the only one. */
function readmeConfig(
  configs: readonly ReadmeConfig[],
  request: { config?: string; label: string },
): ReadmeConfig {
  const names = configs.map((c) => c.name);
  const { label } = request;
  if (request.config !== undefined) {
    const named = configs.find((c) => c.name === request.config);
    if (!named)
      throw badRequest(
        `${label}: no config "${request.config}" in its README.md; configs: ${listNames(names)}`,
        "hub_dataset_config_not_found",
      );
    return named;
  }
  const chosen =
    configs.find((c) => c.default) ??
    configs.find((c) => c.name === "default") ??
    (configs.length === 1 ? configs[0] : null);
  if (!chosen)
    throw badRequest(
      `${label}: its README.md declares several configs (${listNames(names)}); name one with "config"`,
      "hub_dataset_config_required",
    );
  return chosen;
}

function selectFromReadme(
  paths: readonly string[],
  request: { split: string; config?: string; label: string },
  configs: readonly ReadmeConfig[],
): SplitSelection {
  const config = readmeConfig(configs, request);
  const { label } = request;
  const prefix = config.dataDir ? `${config.dataDir}/` : "";
  if (config.splits.length === 0) {
    // A config of only a data_dir: the automatic layout, inside that folder.
    const inside = paths.filter((p) => p.startsWith(prefix)).map((p) => p.slice(prefix.length));
    const selection = selectSplitFiles(inside, { split: request.split, label });
    return { files: selection.files.map((f) => prefix + f), config: config.name, splits: selection.splits };
  }
  const splits = config.splits.map((s) => s.split);
  const wanted = canonicalSplit(request.split);
  const entry =
    config.splits.find((s) => s.split === request.split) ??
    config.splits.find((s) => canonicalSplit(s.split) === wanted);
  if (!entry)
    throw badRequest(
      `${label}: no split "${request.split}" in config "${config.name}" of its README.md; splits: ${listNames(splits)}`,
      "hub_dataset_split_not_found",
    );
  const patterns = entry.patterns.map((p) => globRegex(prefix + p.replace(/^\.?\//, "")));
  const matched = paths.filter((p) => patterns.some((re) => re.test(p))).sort(naturalOrder);
  const where = `config "${config.name}" split "${entry.split}" (README.md: ${entry.patterns.join(", ")})`;
  if (matched.length === 0) throw badRequest(`${label}: ${where} matches no file`, "hub_dataset_no_data");
  const others = matched.filter((p) => !isDataFile(p));
  if (others.length > 0)
    throw badRequest(
      `${label}: ${where} holds files svc does not read (${listNames(others, 5)}); svc reads ${DATA_FILE_FORMATS} files`,
      "hub_dataset_no_data",
    );
  return { files: matched, config: config.name, splits };
}
