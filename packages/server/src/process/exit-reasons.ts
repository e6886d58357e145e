// A server or worker process says why it stops, every time it can: a signal
// (logged where it is handled), an uncaught exception or rejection, or its
// exit code. V8 prints its own "JavaScript heap out of memory" line to stderr
// (the server's log) before it aborts; a SIGKILL (the kernel's OOM killer)
// cannot be seen from inside, and is reported by whoever started the process.
// Native crashes of engine work happen in child processes, which the parent
// logs (engine-process.ts).

/** Installs the handlers; `name` prefixes every line, e.g. "svc server". */
export function logExitReasons(name: string): void {
  process.on("uncaughtException", (error, origin) => {
    const what = origin === "unhandledRejection" ? "an unhandled promise rejection" : "an uncaught exception";
    console.error(`${name}: stopping on ${what}:`, error);
    process.exit(70); // EX_SOFTWARE
  });
  process.on("exit", (code) => {
    console.error(`${name}: exiting with code ${code}`);
  });
}
