// svc start's lines for a Hub dataset the server reads before the job is
// submitted: one while it reads (it may be downloading), one with what it read.
import type { HubDatasetNotice } from "../sdk/trainer.js";

const plural = (n: number, word: string) => `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;

export function formatHubDatasetNotice(notice: HubDatasetNotice): string {
  const { request, dataset, source } = notice;
  const config = request.config ? ` config "${request.config}"` : "";
  const what = `${notice.set === "eval" ? "eval dataset" : "dataset"}: ${request.name}${config} split "${request.split}"`;
  if (!dataset || !source)
    return `${what}: reading it from the Hugging Face Hub (the server fetches it into its cache)…`;
  const files = source.files.length === 1 ? source.files[0] : plural(source.files.length, "file");
  const columns = Object.entries(source.columns)
    .map(([field, column]) => (field === column ? column : `${field}=${column}`))
    .join(", ");
  const origin = source.fromCache ? "from the cache" : "downloaded";
  return `${what}: ${plural(dataset.rows, "row")} from ${files} at ${source.revision.slice(0, 12)} (${origin}; columns ${columns})`;
}
