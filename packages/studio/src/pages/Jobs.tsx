// Jobs: GET /api/jobs at mount and every 5 s, a Refresh control, text search and
// one status chip at a time, rows in the order the server returned them.
import type { Answer, Job } from "@svc/wire";
import { useCallback, useEffect, useState } from "react";
import { errorMessage, getJson } from "../api.js";
import { ErrorText, StatusBadge } from "../components/common.js";
import { filterJobs, jobsEmptyText, STATUS_CHIPS, type StatusChip } from "../lib/jobs-filter.js";

export const JOBS_POLL_MS = 5000;

export function Jobs() {
  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [query, setQuery] = useState("");
  const [chip, setChip] = useState<StatusChip>("all");

  const load = useCallback(() => {
    getJson<Answer<"listJobs">>("/api/jobs")
      .then((r) => {
        setJobs(r.jobs);
        setError(null);
      })
      .catch((e) => setError(errorMessage(e)));
  }, []);

  useEffect(() => {
    load();
    const timer = setInterval(load, JOBS_POLL_MS);
    return () => clearInterval(timer);
  }, [load]);

  const shown = jobs ? filterJobs(jobs, query, chip) : [];
  const empty = jobs ? jobsEmptyText(jobs.length, shown.length) : null;
  return (
    <div className="page">
      <div className="page-head">
        <h1>Jobs</h1>
        <button type="button" className="btn" onClick={load} data-testid="jobs-refresh">
          Refresh
        </button>
      </div>
      <div className="toolbar">
        <input
          className="input search"
          type="search"
          placeholder="Search by name or ID"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          data-testid="jobs-search"
        />
        <div className="chips">
          {STATUS_CHIPS.map((c) => (
            <button
              key={c.chip}
              type="button"
              className={chip === c.chip ? "chip active" : "chip"}
              aria-pressed={chip === c.chip}
              onClick={() => setChip(c.chip)}
            >
              {c.label}
            </button>
          ))}
        </div>
      </div>
      <ErrorText message={error} />
      <section className="card card-flush">
        {jobs === null ? (
          <div className="empty muted">Loading…</div>
        ) : empty ? (
          <div className="empty" data-testid="jobs-empty">
            {empty}
          </div>
        ) : (
          <table className="table" data-testid="jobs-table">
            <thead>
              <tr>
                <th>Status</th>
                <th>Name</th>
                <th>Created</th>
                <th>ID</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((j) => (
                <tr key={j.id} data-job-id={j.id}>
                  <td>
                    <StatusBadge status={j.status} />
                  </td>
                  <td>
                    <a href={`#/jobs/${j.id}`}>{j.name}</a>
                  </td>
                  <td>{new Date(j.createdAt).toLocaleString()}</td>
                  <td className="mono">{j.id}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
