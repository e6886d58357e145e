// Engine work (training, generation) runs in child processes of the server, so
// a native crash in the kernels kills that child only: the API, the edge and
// Studio keep serving, and the parent says why the child died. This module
// forks such a child with an IPC channel, forwards its output to the server's
// log with a prefix, and turns its exit into one sentence.
import { type ChildProcess, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { constants } from "node:os";
import { fileURLToPath } from "node:url";

const STDERR_TAIL_BYTES = 8192;
// What V8 prints when a process dies of heap exhaustion.
const V8_OOM = /JavaScript heap out of memory|Reached heap limit|FATAL ERROR: .*Allocation failed/;

export interface EngineExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** e.g. "killed by SIGSEGV (segmentation fault)", "ran out of memory (the kernel's OOM killer sent SIGKILL)". */
  reason: string;
  /** The exit was a crash, not a clean exit(0). */
  crashed: boolean;
}

export interface EngineProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Resolves once the process has exited and its output is flushed. */
  readonly exited: Promise<EngineExit>;
  send(message: unknown): void;
  kill(signal?: NodeJS.Signals): void;
}

const SIGNAL_MEANING: Partial<Record<NodeJS.Signals, string>> = {
  SIGSEGV: "segmentation fault",
  SIGBUS: "bus error",
  SIGILL: "illegal instruction",
  SIGFPE: "arithmetic exception",
  SIGABRT: "aborted",
  SIGKILL: "killed",
  SIGTERM: "terminated",
};

/** The cgroup (v2) OOM-kill counter of this process's cgroup, or null where it cannot be read. */
export function oomKillCount(): number | null {
  try {
    const events = readFileSync("/sys/fs/cgroup/memory.events", "utf8");
    const match = /^oom_kill (\d+)$/m.exec(events);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** One sentence for how a child process ended. */
export function describeExit(
  code: number | null,
  signal: NodeJS.Signals | null,
  stderrTail: string,
  oomKillsDuringRun: number,
): EngineExit {
  if (V8_OOM.test(stderrTail))
    return {
      code,
      signal,
      crashed: true,
      reason: "ran out of memory (the JavaScript heap limit was reached)",
    };
  if (signal === "SIGKILL" && oomKillsDuringRun > 0)
    return {
      code,
      signal,
      crashed: true,
      reason: "ran out of memory (the kernel's OOM killer sent SIGKILL)",
    };
  if (signal) {
    const number = constants.signals[signal];
    const meaning = SIGNAL_MEANING[signal];
    return {
      code,
      signal,
      crashed: true,
      reason: `was killed by ${signal} (signal ${number}${meaning ? `, ${meaning}` : ""})`,
    };
  }
  if (code === 0) return { code, signal, crashed: false, reason: "exited normally" };
  const lastLine = stderrTail.trim().split("\n").at(-1)?.trim();
  return {
    code,
    signal,
    crashed: true,
    reason: `exited with code ${code}${lastLine ? ` (${lastLine.slice(0, 300)})` : ""}`,
  };
}

/**
 * Forks `entry` (a compiled .js module next to its caller) with an IPC channel.
 * Its stdout and stderr go to this process's, each line prefixed with `label`.
 */
export function forkEngineProcess(entry: URL, label: string): EngineProcess {
  const oomBefore = oomKillCount();
  const child = fork(fileURLToPath(entry), [], {
    // The child must not inherit test-runner or inspector flags of the server.
    execArgv: [],
    stdio: ["ignore", "pipe", "pipe", "ipc"],
    serialization: "advanced",
  });
  let tail = "";
  const relay = (stream: NodeJS.ReadableStream | null, out: NodeJS.WriteStream, keepTail: boolean) => {
    let partial = "";
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      if (keepTail) tail = (tail + chunk).slice(-STDERR_TAIL_BYTES);
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) out.write(`${label} ${line}\n`);
    });
    stream?.on("end", () => {
      if (partial) out.write(`${label} ${partial}\n`);
    });
  };
  relay(child.stdout, process.stdout, false);
  relay(child.stderr, process.stderr, true);
  const exited = new Promise<EngineExit>((resolve) => {
    // "close" comes after the output streams ended, so the tail is complete.
    child.once("close", (code, signal) => {
      const oomAfter = oomKillCount();
      const oomKills = oomBefore !== null && oomAfter !== null ? oomAfter - oomBefore : 0;
      resolve(describeExit(code, signal, tail, oomKills));
    });
    // A fork that fails, or a message sent as the channel closes (EPIPE), is an
    // "error" event: unhandled, it would take the server down with the child.
    child.on("error", (error) => {
      console.error(`${label} ${(error as Error).message}`);
      if (child.pid === undefined)
        resolve({
          code: null,
          signal: null,
          crashed: true,
          reason: `could not start (${(error as Error).message})`,
        });
    });
  });
  return {
    child,
    pid: child.pid ?? -1,
    exited,
    send(message) {
      if (child.connected) child.send(message as Parameters<ChildProcess["send"]>[0]);
    },
    kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

/**
 * In the child: ends the process when the parent goes away (its IPC channel
 * closes), so a crashed or killed server never leaves engine work running on.
 */
export function exitWithParent(): void {
  process.on("disconnect", () => process.exit(0));
  // Ctrl-C in a terminal reaches the whole process group; the parent decides
  // what its children do (checkpoint, then exit), so the child ignores it.
  process.on("SIGINT", () => {});
}
