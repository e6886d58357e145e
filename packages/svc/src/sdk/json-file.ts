// Small JSON state files under ~/.svc and <project>/.svc: read when present,
// written through a temporary file and a rename so a crash never leaves half a file.
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

/** The file's text, or null when it does not exist (other read errors are thrown). */
export async function readTextIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

export interface JsonFileModes {
  /** Mode of the folder when it has to be created. */
  dir?: number;
  /** Mode of the file, set even where the umask would narrow or widen it. */
  file?: number;
}

/** Writes value as indented JSON (and a newline) to path, creating its folder. */
export async function writeJsonFileAtomically(
  path: string,
  value: unknown,
  modes: JsonFileModes = {},
): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: modes.dir });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: modes.file });
  if (modes.file !== undefined) await chmod(tmp, modes.file);
  await rename(tmp, path);
}
