// config.json → ModelConfig: the family modules (families/) read each
// architecture; anything the engine would compute differently is refused.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { EngineError } from "../errors.js";
import { type ModelConfig, parseModelConfig } from "../families/index.js";

export { parseModelConfig } from "../families/index.js";

/** Reads and parses <dir>/config.json. */
export function readModelConfig(dir: string): ModelConfig {
  const file = join(dir, "config.json");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new EngineError("missing_file", `${file}: not found`, file);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new EngineError("invalid_file", `${file}: not valid JSON (${(error as Error).message})`, file);
  }
  return parseModelConfig(raw, file);
}
