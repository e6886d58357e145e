// svc jobs [list] | show <id> | cancel <id> | follow <id>: the project's training runs.

import { apiRecovery } from "../../sdk/api-recovery.js";
import { CloudApiError } from "../../sdk/client.js";
import { streamJobEvents } from "../../sdk/job-event-stream.js";
import { openExistingScopedSession, type ScopedSvcSession } from "../../sdk/session.js";
import { type Command, parse, requirePositional, UsageError } from "../args.js";
import { pausedReasonText } from "../grpo-text.js";
import { OutagePrinter } from "../outage.js";
import { printJson, table } from "../output.js";
import { JobProgressPrinter } from "../progress.js";

const NO_PROJECT = "no project yet: .svc/state.json is created by the first svc start (or svc deploy create)";

async function sessionOrExplain(): Promise<ScopedSvcSession> {
  const session = await openExistingScopedSession();
  if (!session) throw new Error(NO_PROJECT);
  return session;
}

export const jobsCommand: Command = {
  name: "jobs",
  summary: "list, show, follow or cancel training jobs",
  usage: [
    "Usage: svc jobs [list] [--json]",
    "       svc jobs show <id> [--json]",
    "       svc jobs follow <id>     print the job's events until it ends (an outage of the",
    "                                cloud API is handled as in svc start --help)",
    "       svc jobs cancel <id>",
  ].join("\n"),
  async run(argv) {
    const { values, positionals } = parse(argv, { json: { type: "boolean" } }, 2);
    const sub = positionals[0] ?? "list";
    if (sub === "list") {
      const session = await openExistingScopedSession();
      const jobs = session ? await session.scoped.listJobs() : [];
      if (values.json) printJson(jobs);
      else if (!session) process.stdout.write(`No jobs yet (${NO_PROJECT})\n`);
      else if (jobs.length === 0) process.stdout.write("No jobs yet\n");
      else {
        const rows = jobs.map((j) => [j.status, j.name, new Date(j.createdAt).toLocaleString(), j.id]);
        process.stdout.write(`${table(rows, ["STATUS", "NAME", "CREATED", "ID"])}\n`);
      }
      return 0;
    }
    const id = requirePositional(positionals, 1, "job id");
    const { scoped } = await sessionOrExplain();
    if (sub === "show") {
      const job = await scoped.getJob(id);
      const artifacts = await scoped
        .listArtifacts(id)
        .catch((e) => (e instanceof CloudApiError ? [] : Promise.reject(e)));
      if (values.json) printJson({ job, artifacts });
      else {
        const lines = [
          `id          ${job.id}`,
          `name        ${job.name}`,
          `status      ${job.status}${job.pausedReason ? `: ${pausedReasonText(job.pausedReason, job.id)}` : ""}`,
          `base model  ${job.baseModel}`,
          `method      ${job.method ?? "sft"}`,
          `backend     ${job.backend}`,
          // What the job asked for; what ran ("auto" resolved) is on its started line (svc jobs follow).
          `precision   ${job.precision}${job.baseWeights ? `, base weights ${job.baseWeights}` : ""}`,
          `created     ${job.createdAt}`,
          `started     ${job.startedAt ?? "-"}`,
          `finished    ${job.finishedAt ?? "-"}`,
          `artifacts   ${artifacts.map((a) => a.name).join(", ") || "-"}`,
        ];
        // A job restarted after a crash says which attempt it is on and why the one before ended.
        if (job.attempt > 1)
          lines.push(
            `attempt     ${job.attempt}${job.restartedAfter ? ` (restarted after: ${job.restartedAfter})` : ""}`,
          );
        if (job.queuedReason) lines.push(`waiting     ${job.queuedReason}`);
        if (job.error) lines.push(`error       ${job.error}`);
        process.stdout.write(`${lines.join("\n")}\n`);
      }
      return 0;
    }
    if (sub === "cancel") {
      const job = await scoped.cancelJob(id);
      process.stdout.write(`job ${job.id}: ${job.status}\n`);
      return 0;
    }
    if (sub === "follow") {
      const printer = new JobProgressPrinter(process.stdout);
      const outage = new OutagePrinter(printer, process.stdout);
      let failed = false;
      try {
        const recovery = apiRecovery(outage.notice);
        for await (const { event } of streamJobEvents({ client: scoped, jobId: id, recovery })) {
          outage.stopCountdown();
          printer.event(event);
          if (event.type === "training.failed" || event.type === "training.cancelled") failed = true;
        }
      } finally {
        outage.stopCountdown();
        printer.finish();
      }
      return failed ? 1 : 0;
    }
    throw new UsageError(`unknown subcommand "${sub}"`);
  },
};
