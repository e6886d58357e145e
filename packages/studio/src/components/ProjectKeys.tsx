// The project's API keys for the cloud API's OpenAI routes (files, fine-tuning
// jobs, models, chat completions; docs/openai-fine-tuning.md): issue one (its
// plaintext shown once), see when each was last used, revoke it.
import type { Answer, IssuedProjectKey, ProjectKey } from "@svc/wire";
import { useCallback, useEffect, useState } from "react";
import { errorMessage, getJson, sendJson } from "../api.js";
import { CopyButton, ErrorText } from "./common.js";

export function ProjectKeys() {
  const [keys, setKeys] = useState<ProjectKey[]>([]);
  const [label, setLabel] = useState("");
  const [issued, setIssued] = useState<IssuedProjectKey | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    getJson<Answer<"listProjectKeys">>("/api/project-keys")
      .then((r) => setKeys(r.keys))
      .catch((e) => setError(errorMessage(e)));
  }, []);
  useEffect(load, [load]);
  const act = async (request: () => Promise<void>) => {
    setError(null);
    try {
      await request();
      load();
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  const issue = () =>
    act(async () => {
      const r = await sendJson<Answer<"issueProjectKey">>("POST", "/api/project-keys", {
        label: label.trim(),
      });
      setIssued(r.key);
      setLabel("");
    });
  const revoke = (k: ProjectKey) => act(() => sendJson("DELETE", `/api/project-keys/${k.id}`));
  return (
    <section className="card" data-testid="project-keys">
      <div className="card-head">
        <h2>Project API keys</h2>
      </div>
      <p className="muted">
        For OpenAI's client on this server's fine-tuning API and chat completions: set its base URL to the
        cloud API's <code>/v1</code> and its API key to one of these. A key sees this project only.
      </p>
      <form
        className="form-row"
        onSubmit={(e) => {
          e.preventDefault();
          void issue();
        }}
      >
        <label className="field">
          <span>Label</span>
          <input
            className="input"
            value={label}
            maxLength={80}
            onChange={(e) => setLabel(e.target.value)}
            data-testid="project-key-label"
          />
        </label>
        <div className="form-actions">
          <button
            type="submit"
            className="btn"
            disabled={label.trim() === ""}
            data-testid="project-key-issue"
          >
            Issue key
          </button>
        </div>
      </form>
      {issued && (
        <div className="callout" data-testid="issued-project-key">
          <div>
            <strong>{issued.label}</strong>: copy this key now. It is shown once and never again.
          </div>
          <div className="key-plaintext">
            <code data-testid="issued-project-plaintext">{issued.plaintext}</code>
            <CopyButton text={issued.plaintext} />
            <button type="button" className="btn btn-small btn-ghost" onClick={() => setIssued(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <ErrorText message={error} />
      {keys.length === 0 ? (
        <div className="muted">No project keys yet.</div>
      ) : (
        <table className="table" data-testid="project-keys-table">
          <thead>
            <tr>
              <th>Label</th>
              <th>Prefix</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id} className={k.enabled ? "" : "revoked"} data-key-label={k.label}>
                <td>{k.enabled ? k.label : <s>{k.label}</s>}</td>
                <td className="mono">{k.enabled ? `${k.prefix}…` : <s>{k.prefix}…</s>}</td>
                <td>{k.lastUsedAt ? new Date(k.lastUsedAt).toLocaleString() : "never"}</td>
                <td className="right">
                  {k.enabled ? (
                    <button
                      type="button"
                      className="btn btn-small btn-danger-ghost"
                      onClick={() => revoke(k)}
                    >
                      Revoke
                    </button>
                  ) : (
                    <span className="muted">revoked</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
