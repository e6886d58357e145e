// Shell of the single-page app: header with the identity line, the four nav
// tabs, and the hash routes (#/, #/jobs, #/jobs/:id, #/playground,
// #/endpoints, #/endpoints/:id).
import { useEffect, useState } from "react";
import { errorMessage, getJson, IDENTITY_CHANGED_EVENT, STALE_TOKEN_EVENT } from "./api.js";
import { ApiBanner } from "./components/ApiBanner.js";
import { formatIdentity, type StudioIdentity } from "./lib/identity.js";
import { EndpointDetail } from "./pages/EndpointDetail.js";
import { Endpoints } from "./pages/Endpoints.js";
import { JobDetail } from "./pages/JobDetail.js";
import { Jobs } from "./pages/Jobs.js";
import { Overview } from "./pages/Overview.js";
import { Playground } from "./pages/Playground.js";

export type Route =
  | { page: "overview" }
  | { page: "jobs" }
  | { page: "job"; id: string }
  | { page: "playground" }
  | { page: "endpoints" }
  | { page: "endpoint"; id: string };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "jobs") return parts[1] ? { page: "job", id: parts[1] } : { page: "jobs" };
  if (parts[0] === "playground") return { page: "playground" };
  if (parts[0] === "endpoints") return parts[1] ? { page: "endpoint", id: parts[1] } : { page: "endpoints" };
  return { page: "overview" };
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return route;
}

const TABS = [
  { href: "#/", label: "Overview", pages: ["overview"] },
  { href: "#/jobs", label: "Jobs", pages: ["jobs", "job"] },
  { href: "#/playground", label: "Playground", pages: ["playground"] },
  { href: "#/endpoints", label: "Endpoints", pages: ["endpoints", "endpoint"] },
];

/** Re-read on page changes: the project part appears once a first run or deployment creates .svc/state.json. */
function Identity({ page }: { page: Route["page"] }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [changes, setChanges] = useState(0);
  useEffect(() => {
    const on = () => setChanges((n) => n + 1);
    window.addEventListener(IDENTITY_CHANGED_EVENT, on);
    return () => window.removeEventListener(IDENTITY_CHANGED_EVENT, on);
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: page and changes are triggers, not inputs
  useEffect(() => {
    getJson<StudioIdentity>("/api/credentials")
      .then((id) => {
        setText(formatIdentity(id));
        setError(null);
      })
      .catch((e) => setError(errorMessage(e)));
  }, [page, changes]);
  if (error)
    return (
      <span className="identity identity-error" title={error}>
        not signed in
      </span>
    );
  return (
    <span className="identity" data-testid="identity" title={text ?? undefined}>
      {text ?? "…"}
    </span>
  );
}

function StaleTokenBanner() {
  const [stale, setStale] = useState(false);
  useEffect(() => {
    const on = () => setStale(true);
    window.addEventListener(STALE_TOKEN_EVENT, on);
    return () => window.removeEventListener(STALE_TOKEN_EVENT, on);
  }, []);
  if (!stale) return null;
  return (
    <div className="stale-banner" role="alert" data-testid="stale-banner">
      svc dev was restarted since this page loaded, so its token is no longer valid.
      <button type="button" className="btn btn-small" onClick={() => window.location.reload()}>
        Reload
      </button>
    </div>
  );
}

export function App() {
  const route = useRoute();
  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" href="#/">
          <span className="brand-mark">svc</span> Studio
        </a>
        <nav className="tabs">
          {TABS.map((t) => (
            <a key={t.href} href={t.href} className={t.pages.includes(route.page) ? "tab active" : "tab"}>
              {t.label}
            </a>
          ))}
        </nav>
        <Identity page={route.page} />
      </header>
      <StaleTokenBanner />
      <ApiBanner />
      <main className="content">
        {route.page === "overview" && <Overview />}
        {route.page === "jobs" && <Jobs />}
        {route.page === "job" && <JobDetail key={route.id} jobId={route.id} />}
        {route.page === "playground" && <Playground />}
        {route.page === "endpoints" && <Endpoints />}
        {route.page === "endpoint" && <EndpointDetail key={route.id} id={route.id} />}
      </main>
    </div>
  );
}
