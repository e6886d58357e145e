// A lock between processes sharing one cache: an exclusively created file that
// holds the owner's pid. huggingface_hub locks with flock(2) on
// .locks/<repo>/<etag>.lock, which Node cannot call without a native addon, and
// it leaves those files behind; so svc's lock is a file of its own
// (<etag>.svc.lock) that is deleted on release, and a lock whose owner process
// is gone is taken over.
import { open, readFile, rm } from "node:fs/promises";
import { hostname } from "node:os";

const POLL_MS = 150;

function ownerAlive(text: string): boolean {
  const [pid, host] = text.split(" ");
  if (host !== hostname()) return true; // another machine sharing the cache: trust its lock
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Waits until `path` is ours; the returned function releases it. */
export async function acquireFileLock(path: string, signal?: AbortSignal): Promise<() => Promise<void>> {
  for (;;) {
    signal?.throwIfAborted();
    try {
      const handle = await open(path, "wx");
      await handle.writeFile(`${process.pid} ${hostname()}`);
      await handle.close();
      return () => rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const owner = await readFile(path, "utf8").catch(() => null);
    // An empty file is a lock being written this instant; a vanished one is free.
    if (owner && !ownerAlive(owner)) {
      await rm(path, { force: true });
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
