// A base-model combobox: type any Hub id (`org/name[@revision]`) or pick one of
// the server's models (GET /v1/models through /api/models), each shown with its
// family, parameters, context length and whether its files are on the server;
// a Hub id it does not list gets a Download action (ModelDownload.tsx). Every
// picker chooses a model to serve, so a train-only model (an architecture only
// transformers computes) is listed but cannot be picked.
import type { Answer, BaseModelInfo } from "@svc/wire";
import { useCallback, useEffect, useId, useState } from "react";
import { errorMessage, getJson } from "../api.js";
import {
  filterModels,
  isServable,
  looksLikeHubId,
  modelBadge,
  modelFacts,
  trainOnlyReason,
} from "../lib/model-facts.js";
import { ModelDownload } from "./ModelDownload.js";

let modelsRequest: Promise<BaseModelInfo[]> | null = null;
/** Every mounted useBaseModels, told when the list is asked again (a download completed). */
const listeners = new Set<() => void>();

/** Asks the server for its models again, for every picker on the page. */
export function refreshBaseModels(): void {
  modelsRequest = null;
  for (const listener of listeners) listener();
}

/** The server's base models, asked once per page load (a failed ask is retried by the next picker). */
export function useBaseModels(): { models: BaseModelInfo[]; error: string | null } {
  const [models, setModels] = useState<BaseModelInfo[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [asked, setAsked] = useState(0);
  useEffect(() => {
    const listener = () => setAsked((n) => n + 1);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `asked` counts refreshes; each asks again
  useEffect(() => {
    modelsRequest ??= getJson<Answer<"listModels">>("/api/models").then((r) => r.models);
    let live = true;
    modelsRequest.then(
      (m) => {
        if (!live) return;
        setModels(m);
        setError(null);
      },
      (e) => {
        modelsRequest = null;
        if (live) setError(errorMessage(e));
      },
    );
    return () => {
      live = false;
    };
  }, [asked]);
  return { models, error };
}

export function ModelBadge({ model }: { model: BaseModelInfo }) {
  const badge = modelBadge(model);
  if (!badge) return null;
  return (
    <span className={`badge badge-${badge.tone}`} title={badge.title} data-testid="model-badge">
      {badge.text}
    </span>
  );
}

export function BaseModelPicker({
  value,
  onChange,
  testId,
  models: given,
  onDownloaded,
}: {
  value: string;
  onChange: (name: string) => void;
  testId: string;
  /** The models to offer; the picker asks the server itself when left out. */
  models?: BaseModelInfo[];
  /** Called when the picker's Download has put a Hub model in the server's cache (with `models`: refresh them). */
  onDownloaded?: (name: string) => void;
}) {
  const asked = useBaseModels();
  const models = given ?? asked.models;
  const listId = useId();
  const typed = value.trim();
  const exact = models.some((m) => m.name === typed);
  const trainOnly = models.find((m) => m.name === typed && !isServable(m));
  // The whole list while the field holds one of its names, so another is one click away.
  const shown = exact ? models : filterModels(models, typed);
  const downloaded = useCallback(
    (name: string) => (onDownloaded ? onDownloaded(name) : refreshBaseModels()),
    [onDownloaded],
  );
  return (
    <div className="model-picker">
      <input
        className="input mono"
        type="text"
        aria-controls={listId}
        autoComplete="off"
        spellCheck={false}
        value={value}
        aria-label="Base model"
        placeholder="org/model: pick one below or type a Hub id"
        onChange={(e) => onChange(e.target.value)}
        data-testid={testId}
      />
      {shown.length > 0 && (
        <ul className="model-list" id={listId} data-testid={`${testId}-options`}>
          {shown.map((m) => {
            const servable = isServable(m);
            return (
              <li key={m.name}>
                <button
                  type="button"
                  className={`model-option${m.name === typed ? " model-option-selected" : ""}`}
                  aria-pressed={m.name === typed}
                  disabled={!servable}
                  onClick={() => onChange(m.name)}
                  data-model={m.name}
                  title={servable ? `${m.architecture}: ${m.description}` : trainOnlyReason(m)}
                >
                  <span className="model-option-name mono">{m.name}</span>
                  <span className="model-option-facts">{modelFacts(m)}</span>
                  {servable ? (
                    <ModelBadge model={m} />
                  ) : (
                    <span className="badge badge-off" data-testid="model-badge">
                      train only
                    </span>
                  )}
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {trainOnly && (
        <div className="muted model-hint" data-testid={`${testId}-hint`}>
          {trainOnlyReason(trainOnly)}
        </div>
      )}
      {typed !== "" && !exact && (
        <div className="muted model-hint" data-testid={`${testId}-hint`}>
          {looksLikeHubId(typed)
            ? "Not on this server yet: Download fetches it from the Hugging Face Hub into the server's cache, if the server allows it. The Playground and deployments serve it once it is there; a job fetches it itself."
            : "A base model is named org/name (a Hub id), optionally with @revision."}
        </div>
      )}
      {typed !== "" && !exact && looksLikeHubId(typed) && (
        <ModelDownload model={typed} testId={testId} onDone={downloaded} />
      )}
      {!given && asked.error && (
        <div className="muted model-hint">Couldn't list the server's models: {asked.error}</div>
      )}
    </div>
  );
}
