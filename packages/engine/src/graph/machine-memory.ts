// The memory this machine gives the process: physical memory, or the
// cgroup's limit when lower (a container reports its host's memory as
// totalmem). The engine sizes its packed weights by it; the server refuses
// jobs and pulls that cannot fit in it.
import { readFileSync } from "node:fs";
import { totalmem } from "node:os";

export function machineMemoryBytes(): number {
  let limit = totalmem();
  for (const path of ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]) {
    try {
      const value = Number(readFileSync(path, "utf8").trim());
      if (Number.isFinite(value) && value > 0) limit = Math.min(limit, value);
    } catch {
      // not under this cgroup version
    }
  }
  return limit;
}
