// Notices what other processes commit to the shared SQLite file (a
// `svc worker` appending a job's events, settling it), so the server's live
// event feeds and caches learn of it as PostgreSQL's LISTEN/NOTIFY tells them
// there. SQLite bumps `PRAGMA data_version` on a connection whenever another
// connection commits; reading it costs microseconds.
import type BetterSqlite3 from "better-sqlite3";

/** Calls `onChange` within `intervalMs` of a commit by another process; returns the stop function. */
export function watchSqliteChanges(
  sqlite: BetterSqlite3.Database,
  intervalMs: number,
  onChange: () => void,
): () => void {
  const version = () => sqlite.pragma("data_version", { simple: true }) as number;
  let last = version();
  const timer = setInterval(() => {
    try {
      const now = version();
      if (now === last) return;
      last = now;
      onChange();
    } catch (error) {
      // A closed database (shutdown under way): nothing more to watch.
      console.error("svc: watching the SQLite file failed:", (error as Error).message);
      clearInterval(timer);
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
