// Which files of a Hub dataset repository hold one split, read from the file
// names the way the Hub's automatic layout names them (its "File names and
// splits" guide; the `datasets` library's default patterns), so a dataset
// pushed with `push_to_hub`, the Hub's own Parquet conversion and a folder of
// `train.jsonl`/`test.jsonl` files all work without a loading script:
//
// - data files are `.parquet` and `.jsonl` (case-insensitive); files and
//   folders whose names start with "." are not data;
// - `config` names a top-level folder (`<config>/...`, as the Hub's Parquet
//   conversion lays out `<config>/<split>/0000.parquet`); "default" with no
//   such folder means the whole repository;
// - a file's split is, in this order:
//   1. the name before `-NNNNN-of-NNNNN` (push_to_hub's `data/train-00000-of-00001.parquet`);
//   2. the folder of a file named only by digits (`default/train/0000.parquet`);
//   3. a folder, then the file name, holding a split keyword between
//      separators (`-`, `_`, `.`, space, digits, `/`, or either end):
//      train/training → "train", validation/valid/val/dev → "validation",
//      test/testing/eval/evaluation → "test";
// - when no data file has a split, every file is "train";
// - a split's files are read in natural path order (shard 2 before shard 10).
import { badRequest } from "../http/api-error.js";

export const DATA_FILE_EXTENSIONS = [".parquet", ".jsonl"] as const;

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
  if (path.split("/").some((segment) => segment.startsWith("."))) return false;
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

/** Top-level folders holding data files that are not split folders or `data/`: the repository's configs. */
function configFolders(dataFiles: readonly string[]): string[] {
  const folders = new Set<string>();
  for (const path of dataFiles) {
    const slash = path.indexOf("/");
    if (slash < 0) continue;
    const folder = path.slice(0, slash);
    if (folder === "data" || keywordSplit(folder) !== null) continue;
    // A folder of push_to_hub shards (`data/train-00000-of-00001.parquet` under another name) is a config too.
    folders.add(folder);
  }
  return [...folders].sort(naturalOrder);
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
): SplitSelection {
  const dataFiles = paths.filter(isDataFile).sort(naturalOrder);
  const { label } = request;
  if (dataFiles.length === 0) {
    const shown = paths.length === 0 ? "it has no files" : `its files: ${listNames([...paths].sort())}`;
    throw badRequest(
      `${label}: no data files (svc reads ${DATA_FILE_EXTENSIONS.join(" and ")} files; ${shown})`,
      "hub_dataset_no_data",
    );
  }
  const configs = configFolders(dataFiles);
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
    if (dataFiles.every((path) => path.startsWith(`${configs[0]}/`))) config = configs[0];
  }

  const inConfig = config === null ? dataFiles : dataFiles.filter((path) => path.startsWith(`${config}/`));
  const relative = (path: string) => (config === null ? path : path.slice(config.length + 1));
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
