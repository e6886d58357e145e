// The picker's Download action for a Hub model the server does not have yet:
// asks the server to pull it (POST /api/models/pull → /v1/models/pull), then
// shows the pull's bar and bytes, asking every half second until it has
// completed (onDone: the caller refreshes its model list, which then lists the
// model as cached) or failed (the server's reason).
import type { Answer, ModelPull } from "@svc/wire";
import { useEffect, useState } from "react";
import { errorMessage, getJson, sendJson } from "../api.js";
import { pullSummary } from "../lib/model-facts.js";
import { ProgressBar } from "./DownloadProgressCard.js";

const POLL_MS = 500;

export function ModelDownload({
  model,
  testId,
  onDone,
}: {
  model: string;
  testId: string;
  onDone: (model: string) => void;
}) {
  const [pull, setPull] = useState<ModelPull | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [asking, setAsking] = useState(false);

  // A new name in the field is a new download to offer.
  // biome-ignore lint/correctness/useExhaustiveDependencies: reset when the model changes
  useEffect(() => {
    setPull(null);
    setError(null);
  }, [model]);

  const pullId = pull?.status === "downloading" ? pull.id : null;
  useEffect(() => {
    if (!pullId) return;
    let live = true;
    const timer = setInterval(() => {
      getJson<Answer<"getModelPull">>(`/api/models/pull/${encodeURIComponent(pullId)}`).then(
        (r) => {
          if (!live) return;
          setPull(r.pull);
          if (r.pull.status === "completed") onDone(r.pull.model);
        },
        (e) => live && setError(errorMessage(e)),
      );
    }, POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [pullId, onDone]);

  const start = async () => {
    setAsking(true);
    setError(null);
    try {
      const r = await sendJson<Answer<"pullModel">>("POST", "/api/models/pull", { model });
      setPull(r.pull);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setAsking(false);
    }
  };

  const failed = pull?.status === "failed" ? pull.error?.message : null;
  return (
    <div className="model-download" data-testid={`${testId}-download`} data-status={pull?.status ?? "idle"}>
      {(!pull || pull.status === "failed") && (
        <button
          type="button"
          className="btn btn-small"
          onClick={start}
          disabled={asking}
          data-testid={`${testId}-download-start`}
        >
          {pull ? "Try again" : "Download"}
        </button>
      )}
      {pull && pull.status !== "failed" && (
        <>
          <ProgressBar done={pull.bytesDone} total={pull.bytesTotal} label={`${model} download`} />
          <span className="muted mono" data-testid={`${testId}-download-bytes`}>
            {pullSummary(pull)}
          </span>
        </>
      )}
      {(failed || error) && (
        <span className="error-text" data-testid={`${testId}-download-error`}>
          {failed ?? error}
        </span>
      )}
    </div>
  );
}
