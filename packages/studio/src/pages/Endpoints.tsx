// Endpoints: the deployment list (slug + host suffix, target summary, auth
// mode, enabled badge), the inline create form, and the project's API keys.
import type { Answer, AuthMode, Deployment } from "@svc/wire";
import { useCallback, useEffect, useState } from "react";
import { errorMessage, getJson, IDENTITY_CHANGED_EVENT, sendJson } from "../api.js";
import { ErrorText } from "../components/common.js";
import { ProjectKeys } from "../components/ProjectKeys.js";
import { TargetFields } from "../components/TargetFields.js";
import { type TargetForm, targetFromForm, targetSummary } from "../lib/targets.js";

export function hostSuffix(d: Pick<Deployment, "url" | "slug">): string {
  try {
    const host = new URL(d.url).host;
    return host.startsWith(`${d.slug}.`) ? host.slice(d.slug.length) : `.${host}`;
  } catch {
    return "";
  }
}

function CreateForm({ onCreated, onCancel }: { onCreated: () => void; onCancel: () => void }) {
  const [slug, setSlug] = useState("");
  const [target, setTarget] = useState<TargetForm>({ kind: "final", jobId: "", step: "", baseModel: "" });
  const [authMode, setAuthMode] = useState<AuthMode>("fixed_api_key");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    const t = targetFromForm(target);
    if ("error" in t) return setError(t.error);
    setBusy(true);
    setError(null);
    try {
      await sendJson("POST", "/api/deployments", { slug: slug.trim(), target: t.target, authMode });
      window.dispatchEvent(new Event(IDENTITY_CHANGED_EVENT));
      onCreated();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      className="card create-form"
      data-testid="create-form"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <h2>New endpoint</h2>
      <div className="form-row">
        <label className="field">
          <span>Slug</span>
          <input
            className="input mono"
            value={slug}
            onChange={(e) => setSlug(e.target.value)}
            placeholder="my-assistant"
            data-testid="create-slug"
          />
        </label>
        <label className="field">
          <span>Auth mode</span>
          <select
            className="input"
            value={authMode}
            onChange={(e) => setAuthMode(e.target.value as AuthMode)}
            data-testid="create-auth"
          >
            <option value="fixed_api_key">Fixed API key</option>
            <option value="none">No auth (public)</option>
          </select>
        </label>
      </div>
      <TargetFields form={target} onChange={setTarget} />
      <ErrorText message={error} />
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={busy} data-testid="create-submit">
          Create endpoint
        </button>
        <button type="button" className="btn btn-ghost" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function Endpoints() {
  const [list, setList] = useState<Deployment[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const load = useCallback(() => {
    getJson<Answer<"listDeployments">>("/api/deployments")
      .then((r) => setList(r.deployments))
      .catch((e) => setError(errorMessage(e)));
  }, []);
  useEffect(() => {
    // Credentials first (minted when missing), then the list.
    getJson("/api/credentials")
      .catch(() => undefined)
      .then(load);
  }, [load]);

  return (
    <div className="page">
      <div className="page-head">
        <h1>Endpoints</h1>
        {!creating && (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => setCreating(true)}
            data-testid="new-endpoint"
          >
            New endpoint
          </button>
        )}
      </div>
      {creating && (
        <CreateForm
          onCreated={() => {
            setCreating(false);
            load();
          }}
          onCancel={() => setCreating(false)}
        />
      )}
      <ErrorText message={error} />
      <section className="card card-flush">
        {list === null ? (
          <div className="empty muted">Loading…</div>
        ) : list.length === 0 ? (
          <div className="empty" data-testid="endpoints-empty">
            No endpoints yet. Publish a trained adapter or a base model as an OpenAI-compatible URL.
          </div>
        ) : (
          <ul className="endpoint-list" data-testid="endpoint-list">
            {list.map((d) => (
              <li key={d.id}>
                <a href={`#/endpoints/${d.id}`} className="endpoint-row" data-slug={d.slug}>
                  <span className="endpoint-host">
                    <strong>{d.slug}</strong>
                    <span className="muted">{hostSuffix(d)}</span>
                  </span>
                  <span className="endpoint-target">{targetSummary(d.target)}</span>
                  <span className="badge badge-neutral">{d.authMode}</span>
                  <span className={d.enabled ? "badge badge-on" : "badge badge-off"}>
                    {d.enabled ? "enabled" : "disabled"}
                  </span>
                </a>
              </li>
            ))}
          </ul>
        )}
      </section>
      <ProjectKeys />
    </div>
  );
}
