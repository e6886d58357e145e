// A base-model combobox: type any Hub id (`org/name[@revision]`) or pick one of
// the server's models (GET /v1/models through /api/models), each shown with its
// family, parameters, context length and whether its files are on the server.
import type { BaseModelInfo } from "@svc/server/wire";
import { useEffect, useId, useState } from "react";
import { errorMessage, getJson } from "../api.js";
import { filterModels, looksLikeHubId, modelBadge, modelFacts } from "../lib/model-facts.js";

let modelsRequest: Promise<BaseModelInfo[]> | null = null;

/** The server's base models, asked once per page load (a failed ask is retried by the next picker). */
export function useBaseModels(): { models: BaseModelInfo[]; error: string | null } {
  const [models, setModels] = useState<BaseModelInfo[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    modelsRequest ??= getJson<{ models: BaseModelInfo[] }>("/api/models").then((r) => r.models);
    let live = true;
    modelsRequest.then(
      (m) => live && setModels(m),
      (e) => {
        modelsRequest = null;
        if (live) setError(errorMessage(e));
      },
    );
    return () => {
      live = false;
    };
  }, []);
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
}: {
  value: string;
  onChange: (name: string) => void;
  testId: string;
  /** The models to offer; the picker asks the server itself when left out. */
  models?: BaseModelInfo[];
}) {
  const asked = useBaseModels();
  const models = given ?? asked.models;
  const listId = useId();
  const typed = value.trim();
  const exact = models.some((m) => m.name === typed);
  // The whole list while the field holds one of its names, so another is one click away.
  const shown = exact ? models : filterModels(models, typed);
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
          {shown.map((m) => (
            <li key={m.name}>
              <button
                type="button"
                className={`model-option${m.name === typed ? " model-option-selected" : ""}`}
                aria-pressed={m.name === typed}
                onClick={() => onChange(m.name)}
                data-model={m.name}
                title={`${m.architecture}: ${m.description}`}
              >
                <span className="model-option-name mono">{m.name}</span>
                <span className="model-option-facts">{modelFacts(m)}</span>
                <ModelBadge model={m} />
              </button>
            </li>
          ))}
        </ul>
      )}
      {typed !== "" && !exact && (
        <div className="muted model-hint" data-testid={`${testId}-hint`}>
          {looksLikeHubId(typed)
            ? "Not on this server yet: it is fetched from the Hugging Face Hub when first used, if the server allows it."
            : "A base model is named org/name (a Hub id), optionally with @revision."}
        </div>
      )}
      {!given && asked.error && (
        <div className="muted model-hint">Couldn't list the server's models: {asked.error}</div>
      )}
    </div>
  );
}
