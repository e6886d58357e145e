// Endpoint detail: the serving URL, Quick start samples (built locally, no
// upstream call), Settings (enable/disable, auth mode, target), API keys.
import type { Answer, AuthMode, Deployment, DeploymentKey, IssuedDeploymentKey } from "@svc/wire";
import { useCallback, useEffect, useState } from "react";
import { errorMessage, getJson, sendJson } from "../api.js";
import { CodeBlock, CopyButton, ErrorText } from "../components/common.js";
import { TargetFields } from "../components/TargetFields.js";
import { keyUsageCells, keyUsageWindow } from "../lib/key-usage.js";
import {
  QUICKSTART_LANGUAGES,
  QUICKSTART_OPERATIONS,
  type QuickstartLanguage,
  type QuickstartOperation,
  quickstartSample,
} from "../lib/quickstart.js";
import { formFromTarget, type TargetForm, targetFromForm, targetSummary } from "../lib/targets.js";

function QuickStart({ d }: { d: Deployment }) {
  const [lang, setLang] = useState<QuickstartLanguage>("curl");
  const [op, setOp] = useState<QuickstartOperation>(QUICKSTART_OPERATIONS[0].id);
  const [hidden, setHidden] = useState(false);
  return (
    <section className="card" data-testid="quickstart">
      <div className="card-head">
        <h2>Quick start</h2>
        <button
          type="button"
          className="btn btn-small btn-ghost"
          onClick={() => setHidden((h) => !h)}
          data-testid="qs-hide"
        >
          {hidden ? "Show" : "Hide"}
        </button>
      </div>
      {!hidden && (
        <>
          <div className="form-row">
            <div className="segmented" role="tablist" aria-label="Language">
              {QUICKSTART_LANGUAGES.map((l) => (
                <button
                  key={l.id}
                  type="button"
                  role="tab"
                  aria-selected={lang === l.id}
                  className={lang === l.id ? "seg active" : "seg"}
                  onClick={() => setLang(l.id)}
                >
                  {l.label}
                </button>
              ))}
            </div>
            <label className="field field-inline">
              <span>Operation</span>
              <select
                className="input"
                value={op}
                onChange={(e) => setOp(e.target.value as QuickstartOperation)}
              >
                {QUICKSTART_OPERATIONS.map((o) => (
                  <option key={o.id} value={o.id}>
                    {o.label}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <CodeBlock
            code={quickstartSample(lang, { url: d.url, authMode: d.authMode, slug: d.slug }, op)}
            testId="qs-code"
          />
        </>
      )}
    </section>
  );
}

function Settings({ d, onSaved }: { d: Deployment; onSaved: (d: Deployment) => void }) {
  const [error, setError] = useState<string | null>(null);
  const [target, setTarget] = useState<TargetForm>(() => formFromTarget(d.target));
  const [editingTarget, setEditingTarget] = useState(false);
  const patch = async (body: Record<string, unknown>) => {
    setError(null);
    try {
      const r = await sendJson<Answer<"updateDeployment">>("PATCH", `/api/deployments/${d.id}`, body);
      onSaved(r.deployment);
      return true;
    } catch (e) {
      setError(errorMessage(e));
      return false;
    }
  };
  return (
    <section className="card" data-testid="settings">
      <h2>Settings</h2>
      <div className="setting">
        <div>
          <div className="setting-title">Status</div>
          <div className="muted">Disabled endpoints answer 404; the slug stays reserved.</div>
        </div>
        <button
          type="button"
          className={d.enabled ? "btn" : "btn btn-primary"}
          onClick={() => patch({ enabled: !d.enabled })}
          data-testid="toggle-enabled"
        >
          {d.enabled ? "Disable" : "Enable"}
        </button>
      </div>
      <div className="setting">
        <div>
          <div className="setting-title">Auth mode</div>
          <div className="muted">Keys are kept when the mode changes.</div>
        </div>
        <select
          className="input"
          value={d.authMode}
          onChange={(e) => patch({ authMode: e.target.value as AuthMode })}
          data-testid="auth-mode"
        >
          <option value="fixed_api_key">Fixed API key</option>
          <option value="none">No auth (public)</option>
        </select>
      </div>
      <div className="setting setting-column">
        <div className="setting-line">
          <div>
            <div className="setting-title">Target</div>
            <div className="muted">{targetSummary(d.target)}</div>
          </div>
          {!editingTarget && (
            <button type="button" className="btn" onClick={() => setEditingTarget(true)}>
              Edit target
            </button>
          )}
        </div>
        {editingTarget && (
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              const t = targetFromForm(target);
              if ("error" in t) return setError(t.error);
              if (await patch({ target: t.target })) setEditingTarget(false);
            }}
          >
            <TargetFields form={target} onChange={setTarget} />
            <div className="form-actions">
              <button type="submit" className="btn btn-primary">
                Save target
              </button>
              <button type="button" className="btn btn-ghost" onClick={() => setEditingTarget(false)}>
                Cancel
              </button>
            </div>
          </form>
        )}
      </div>
      <ErrorText message={error} />
    </section>
  );
}

function ApiKeys({ d }: { d: Deployment }) {
  const [keys, setKeys] = useState<DeploymentKey[]>([]);
  const [asking, setAsking] = useState(false);
  const [label, setLabel] = useState("");
  const [issued, setIssued] = useState<IssuedDeploymentKey | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    getJson<Answer<"listDeploymentKeys">>(`/api/deployments/${d.id}/keys`)
      .then((r) => setKeys(r.keys))
      .catch((e) => setError(errorMessage(e)));
  }, [d.id]);
  useEffect(load, [load]);
  const issue = async () => {
    setError(null);
    try {
      const r = await sendJson<Answer<"issueDeploymentKey">>("POST", `/api/deployments/${d.id}/keys`, {
        label: label.trim(),
      });
      setIssued(r.key);
      setAsking(false);
      setLabel("");
      load();
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  const revoke = async (k: DeploymentKey) => {
    setError(null);
    try {
      await sendJson("DELETE", `/api/deployments/${d.id}/keys/${k.id}`);
      load();
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <section className="card" data-testid="api-keys">
      <div className="card-head">
        <h2>API keys</h2>
        {!asking && (
          <button type="button" className="btn" onClick={() => setAsking(true)} data-testid="issue-key">
            Issue key
          </button>
        )}
      </div>
      {d.authMode === "none" && (
        <p className="muted">
          This endpoint is public; keys are enforced again when the auth mode is Fixed API key.
        </p>
      )}
      {asking && (
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
              data-testid="key-label"
            />
          </label>
          <div className="form-actions">
            <button type="submit" className="btn btn-primary" data-testid="key-issue-submit">
              Issue
            </button>
            <button type="button" className="btn btn-ghost" onClick={() => setAsking(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {issued && (
        <div className="callout" data-testid="issued-key">
          <div>
            <strong>{issued.label}</strong>: copy this key now. It is shown once and never again.
          </div>
          <div className="key-plaintext">
            <code data-testid="issued-plaintext">{issued.plaintext}</code>
            <CopyButton text={issued.plaintext} />
            <button type="button" className="btn btn-small btn-ghost" onClick={() => setIssued(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <ErrorText message={error} />
      {keys.length === 0 ? (
        <div className="muted">No keys yet.</div>
      ) : (
        <table className="table" data-testid="keys-table">
          <thead>
            <tr>
              <th>Label</th>
              <th>Prefix</th>
              <th className="right" title={`Edge requests, ${keyUsageWindow(keys[0].usage.days)} (UTC)`}>
                Requests
              </th>
              <th className="right">Prompt tokens</th>
              <th className="right">Completion tokens</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => {
              const usage = keyUsageCells(k.usage);
              return (
                <tr key={k.id} className={k.enabled ? "" : "revoked"} data-key-label={k.label}>
                  <td>{k.enabled ? k.label : <s>{k.label}</s>}</td>
                  <td className="mono">{k.enabled ? `${k.prefix}…` : <s>{k.prefix}…</s>}</td>
                  <td className="right num" title={usage.title} data-testid="key-requests">
                    {usage.requests}
                  </td>
                  <td className="right num" title={usage.title} data-testid="key-prompt-tokens">
                    {usage.promptTokens}
                  </td>
                  <td className="right num" title={usage.title} data-testid="key-completion-tokens">
                    {usage.completionTokens}
                  </td>
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
              );
            })}
          </tbody>
        </table>
      )}
      {keys.length > 0 && (
        <p className="muted" data-testid="key-usage-note">
          Requests and tokens over the {keyUsageWindow(keys[0].usage.days)} (UTC, today included), as of when
          this list was read.
        </p>
      )}
    </section>
  );
}

export function EndpointDetail({ id }: { id: string }) {
  const [d, setD] = useState<Deployment | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    getJson<Answer<"getDeployment">>(`/api/deployments/${encodeURIComponent(id)}`)
      .then((r) => setD(r.deployment))
      .catch((e) => setError(errorMessage(e)));
  }, [id]);
  const remove = async () => {
    if (!d || !window.confirm(`Delete ${d.slug}? Its URL stops answering and its keys are removed.`)) return;
    try {
      await sendJson("DELETE", `/api/deployments/${d.id}`);
      window.location.hash = "#/endpoints";
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <div className="page">
      <div className="page-head">
        <div>
          <a href="#/endpoints" className="crumb">
            Endpoints
          </a>
          <h1>
            {d?.slug ?? "…"}{" "}
            {d && (
              <span className={d.enabled ? "badge badge-on" : "badge badge-off"}>
                {d.enabled ? "enabled" : "disabled"}
              </span>
            )}
          </h1>
        </div>
        {d && (
          <button type="button" className="btn btn-danger-ghost" onClick={remove}>
            Delete
          </button>
        )}
      </div>
      <ErrorText message={error} />
      {d && (
        <>
          <section className="card">
            <h2>Endpoint URL</h2>
            <div className="url-box">
              <code data-testid="endpoint-url">{d.url}</code>
              <CopyButton text={d.url} />
            </div>
            <p className="muted">
              {targetSummary(d.target)} ·{" "}
              {d.upstream && (
                <span data-testid="endpoint-upstream">
                  served by upstream {d.upstream.name} as {d.upstream.model} ·{" "}
                </span>
              )}
              {d.authMode === "fixed_api_key" ? "requires an API key" : "public, no key needed"}
            </p>
          </section>
          <QuickStart d={d} />
          <Settings d={d} onSaved={setD} />
          <ApiKeys d={d} />
        </>
      )}
    </div>
  );
}
