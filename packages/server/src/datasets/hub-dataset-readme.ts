// A Hub dataset's own file layout: the `configs:` section of its README.md
// front matter (the Hub's "manual configuration"; `push_to_hub` writes one),
// which names each config's files per split with glob patterns:
//
//   configs:
//   - config_name: default
//     default: true
//     data_dir: optional/folder
//     data_files:
//     - split: train
//       path: data/train-*          (or a list of patterns)
//
// `data_files` may also be one pattern or a list of them (all "train"), or a
// map of split → pattern(s). Only this section is read, with a parser for the
// block YAML it is written in; anything else in it is refused naming the line,
// so a layout svc misreads never trains silently.

export interface ReadmeConfig {
  name: string;
  default: boolean;
  /** Folder the patterns are relative to ("" for the repository root). */
  dataDir: string;
  /** Each split's glob patterns; empty when the config names only a data_dir (the automatic layout applies there). */
  splits: { split: string; patterns: string[] }[];
}

export class ReadmeConfigError extends Error {}

type Yaml = string | boolean | null | Yaml[] | { [key: string]: Yaml };

interface Line {
  indent: number;
  text: string;
  number: number;
}

const isItem = (text: string) => text === "-" || text.startsWith("- ");
const ENTRY = /^("[^"]*"|'[^']*'|[^\s"'[{#-][^:]*?|-[^\s:][^:]*?)\s*:(?:\s+(.*))?$/;

function unquote(text: string): string {
  const t = text.trim();
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) return JSON.parse(t) as string;
  if (t.length >= 2 && t.startsWith("'") && t.endsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
  return t;
}

function scalar(raw: string, line: Line): Yaml {
  const t = raw.trim();
  if (t === "" || t === "null" || t === "~") return null;
  if (t === "true") return true;
  if (t === "false") return false;
  if (t.startsWith("[") && t.endsWith("]"))
    return t
      .slice(1, -1)
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "")
      .map(unquote);
  if (/^[|>{&*!]/.test(t))
    throw new ReadmeConfigError(`README.md line ${line.number}: "${t}" is YAML svc does not read here`);
  return unquote(t);
}

class BlockParser {
  private at = 0;
  constructor(private readonly lines: Line[]) {}

  document(): Yaml {
    const value = this.node(0);
    const rest = this.lines[this.at];
    if (rest) throw new ReadmeConfigError(`README.md line ${rest.number}: unexpected indentation`);
    return value;
  }

  private node(indent: number): Yaml {
    const line = this.lines[this.at];
    if (!line || line.indent < indent) return null;
    return isItem(line.text) ? this.sequence(line.indent) : this.map(line.indent);
  }

  private sequence(indent: number): Yaml[] {
    const out: Yaml[] = [];
    for (
      let line = this.lines[this.at];
      line && line.indent === indent && isItem(line.text);
      line = this.lines[this.at]
    ) {
      const rest = line.text.slice(1).trimStart();
      if (rest === "") {
        this.at++;
        out.push(this.node(indent + 1));
      } else if (ENTRY.test(rest)) {
        // "- key: value" opens a map whose other keys line up with "key".
        this.lines[this.at] = {
          indent: indent + line.text.length - rest.length,
          text: rest,
          number: line.number,
        };
        out.push(this.map(this.lines[this.at].indent));
      } else {
        this.at++;
        out.push(scalar(rest, line));
      }
    }
    return out;
  }

  private map(indent: number): { [key: string]: Yaml } {
    const out: { [key: string]: Yaml } = {};
    for (
      let line = this.lines[this.at];
      line && line.indent === indent && !isItem(line.text);
      line = this.lines[this.at]
    ) {
      const entry = ENTRY.exec(line.text);
      if (!entry) throw new ReadmeConfigError(`README.md line ${line.number}: expected "key: value"`);
      this.at++;
      const key = unquote(entry[1]);
      if (entry[2] !== undefined && entry[2].trim() !== "") {
        out[key] = scalar(entry[2], line);
        continue;
      }
      const next = this.lines[this.at];
      const nested = next && (next.indent > indent || (next.indent === indent && isItem(next.text)));
      out[key] = nested ? this.node(next.indent) : null;
    }
    return out;
  }
}

/** The lines of the front matter's `configs:` section (with the key), or null when there is none. */
function configsSection(readme: string): Line[] | null {
  const lines = readme.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines[0]?.trim() !== "---") return null;
  const end = lines.findIndex((line, i) => i > 0 && line.trim() === "---");
  if (end < 0) return null;
  const start = lines.findIndex((line, i) => i > 0 && i < end && /^configs\s*:\s*$/.test(line));
  if (start < 0) return null;
  const section: Line[] = [];
  for (let i = start; i < end; i++) {
    const raw = lines[i];
    const text = raw.replace(/\s+#.*$/, "").trimEnd();
    if (text.trim() === "" || text.trim().startsWith("#")) continue;
    const indent = text.length - text.trimStart().length;
    if (i > start && indent === 0 && !isItem(text.trim())) break;
    if (raw.includes("\t"))
      throw new ReadmeConfigError(`README.md line ${i + 1}: tabs are not YAML indentation`);
    section.push({ indent, text: text.trim(), number: i + 1 });
  }
  return section;
}

const strings = (value: Yaml, where: string): string[] => {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || list.some((v) => typeof v !== "string" || v === ""))
    throw new ReadmeConfigError(`README.md configs: ${where} must be a file pattern or a list of them`);
  return list as string[];
};

function splitsOf(dataFiles: Yaml, config: string): ReadmeConfig["splits"] {
  const where = `config "${config}" data_files`;
  if (dataFiles === null) return [];
  if (
    typeof dataFiles === "string" ||
    (Array.isArray(dataFiles) && dataFiles.every((d) => typeof d === "string"))
  )
    return [{ split: "train", patterns: strings(dataFiles, where) }];
  if (Array.isArray(dataFiles))
    return dataFiles.map((entry) => {
      if (
        typeof entry !== "object" ||
        entry === null ||
        Array.isArray(entry) ||
        typeof entry.split !== "string"
      )
        throw new ReadmeConfigError(`README.md configs: ${where} entries must be { split, path }`);
      return {
        split: entry.split,
        patterns: strings(entry.path ?? null, `${where} split "${entry.split}" path`),
      };
    });
  if (typeof dataFiles === "object")
    return Object.entries(dataFiles).map(([split, patterns]) => ({
      split,
      patterns: strings(patterns, `${where}.${split}`),
    }));
  throw new ReadmeConfigError(`README.md configs: ${where} must be patterns or { split, path } entries`);
}

/** The configs README.md declares, or null when it declares none (the automatic layout applies). */
export function readmeConfigs(readme: string): ReadmeConfig[] | null {
  const section = configsSection(readme);
  if (!section) return null;
  const parsed = new BlockParser(section).document() as { configs?: Yaml };
  const configs = parsed.configs;
  if (!Array.isArray(configs) || configs.length === 0)
    throw new ReadmeConfigError("README.md configs: expected a list of { config_name, data_files }");
  return configs.map((item) => {
    if (
      typeof item !== "object" ||
      item === null ||
      Array.isArray(item) ||
      typeof item.config_name !== "string"
    )
      throw new ReadmeConfigError("README.md configs: every entry needs a config_name");
    const name = item.config_name;
    const dataDir = typeof item.data_dir === "string" ? item.data_dir.replace(/^\/+|\/+$/g, "") : "";
    return { name, default: item.default === true, dataDir, splits: splitsOf(item.data_files ?? null, name) };
  });
}

/** A data_files glob as the Hub resolves it (fsspec): `*` and `?` within a folder, `**` across folders. */
export function globRegex(pattern: string): RegExp {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*" && pattern[i + 1] === "*") {
      const slash = pattern[i + 2] === "/";
      out += slash ? "(?:.*/)?" : ".*";
      i += slash ? 2 : 1;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}
