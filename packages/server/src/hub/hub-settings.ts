// Where the Hugging Face cache is, which Hub to ask, with which token, and
// whether to ask at all: read from the environment the way huggingface_hub
// reads it (its constants.py), at each call, so one process can serve tests
// that change them.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export const DEFAULT_HUB_ENDPOINT = "https://huggingface.co";

/** $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface. */
export function hfHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HOME) return env.HF_HOME;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "huggingface");
}

/** $HF_HUB_CACHE (or its older name $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub. */
export function hubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.HF_HUB_CACHE || env.HUGGINGFACE_HUB_CACHE || join(hfHome(env), "hub");
}

/** $HF_ENDPOINT without a trailing slash, else https://huggingface.co. */
export function hubEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return (env.HF_ENDPOINT || DEFAULT_HUB_ENDPOINT).replace(/\/+$/, "");
}

/** huggingface_hub's truthy values: "1", "ON", "YES", "TRUE" in any case. */
function truthy(value: string | undefined): boolean {
  return value !== undefined && ["1", "ON", "YES", "TRUE"].includes(value.trim().toUpperCase());
}

export function hubOffline(env: NodeJS.ProcessEnv = process.env): boolean {
  return truthy(env.HF_HUB_OFFLINE);
}

/** Where `hf auth login` (huggingface-cli login) stores the token: $HF_TOKEN_PATH, else $HF_HOME/token. */
export function hubTokenPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.HF_TOKEN_PATH || join(hfHome(env), "token");
}

/** $HF_TOKEN (or the older $HUGGING_FACE_HUB_TOKEN), else the token file; undefined when neither is set. */
export function hubToken(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env.HF_TOKEN || env.HUGGING_FACE_HUB_TOKEN;
  if (fromEnv?.trim()) return fromEnv.trim();
  try {
    const fromFile = readFileSync(hubTokenPath(env), "utf8").trim();
    return fromFile || undefined;
  } catch {
    return undefined;
  }
}
