// Client-side narrowing of the Jobs list: a case-insensitive substring search on
// name or id, and one status chip at a time.
import type { Job, JobStatus } from "@svc/wire";

export type StatusChip = "all" | JobStatus;

export const STATUS_CHIPS: { chip: StatusChip; label: string }[] = [
  { chip: "all", label: "All" },
  { chip: "running", label: "Running" },
  { chip: "completed", label: "Completed" },
  { chip: "queued", label: "Queued" },
  { chip: "failed", label: "Failed" },
  { chip: "cancelled", label: "Cancelled" },
];

export function filterJobs<J extends Pick<Job, "id" | "name" | "status">>(
  jobs: readonly J[],
  query: string,
  chip: StatusChip,
): J[] {
  const q = query.trim().toLowerCase();
  return jobs.filter(
    (j) =>
      (chip === "all" || j.status === chip) &&
      (q === "" || j.name.toLowerCase().includes(q) || j.id.toLowerCase().includes(q)),
  );
}

/** The empty-state text: none at all versus none after narrowing; null when rows show. */
export function jobsEmptyText(total: number, shown: number): string | null {
  if (total === 0) return "No jobs yet";
  if (shown === 0) return "No matches";
  return null;
}
