// A job runner's name carries its process id, so a sweeper on the same
// machine (SQLite: every process that opens the file runs there) can tell at
// once that the runner holding a job is gone, instead of waiting for its lease
// to lapse. A name without a pid, or a pid that is alive (perhaps reused by
// another process), leaves it to the lease.
import { randomBase62 } from "../ids.js";

/** The runners this process named: a name with this pid but not among them is an earlier process's. */
const namedHere = new Set<string>();

/** `worker-<pid>-<random>`: unique, and names the process that holds its jobs. */
export function runnerName(): string {
  const name = `worker-${process.pid}-${randomBase62(8)}`;
  namedHere.add(name);
  return name;
}

/** Whether the process named in a runner's name is known to have exited. */
export function runnerProcessGone(owner: string): boolean {
  const match = /^worker-(\d+)-[A-Za-z0-9]+$/.exec(owner);
  if (!match) return false;
  const pid = Number(match[1]);
  // A container restarted gives its new server the old one's pid.
  if (pid === process.pid) return !namedHere.has(owner);
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}
