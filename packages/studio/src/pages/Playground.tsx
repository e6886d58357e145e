// Playground: streaming chat with a completed job's adapter (final or a
// checkpoint) or with a base model from GET /v1/models (or any Hub id typed in
// the base-model picker), with sampling controls, tool definitions and a
// JSON-schema output mode (components/ToolsPanel.tsx).
import type {
  AdapterRef,
  Answer,
  Artifact,
  BaseModelInfo,
  ChatMessage,
  Job,
  StudioChatLine,
} from "@svc/wire";
import { useCallback, useEffect, useRef, useState } from "react";
import { errorMessage, getJson, studioFetch } from "../api.js";
import { BaseModelPicker } from "../components/BaseModelPicker.js";
import { ErrorText, shortId } from "../components/common.js";
import {
  NO_TOOLS,
  ToolCallList,
  ToolsPanel,
  toolRequestOf,
  unansweredCall,
} from "../components/ToolsPanel.js";
import { isServable } from "../lib/model-facts.js";

type ModelChoice = { kind: "base"; name: string } | { kind: "job"; jobId: string };

/** The select's value while the picker holds a Hub id that is not among the server's models. */
const OTHER_BASE = "base-other";

const encodeChoice = (c: ModelChoice) => (c.kind === "base" ? `base:${c.name}` : `job:${c.jobId}`);
const decodeChoice = (v: string): ModelChoice | null =>
  v.startsWith("base:")
    ? { kind: "base", name: v.slice(5) }
    : v.startsWith("job:")
      ? { kind: "job", jobId: v.slice(4) }
      : null;

export function Playground() {
  const [models, setModels] = useState<BaseModelInfo[]>([]);
  const [jobs, setJobs] = useState<Job[]>([]);
  const [choice, setChoice] = useState("");
  const [otherBase, setOtherBase] = useState("");
  const [checkpoints, setCheckpoints] = useState<Artifact[]>([]);
  const [checkpoint, setCheckpoint] = useState("final");
  const [temperature, setTemperature] = useState(0.7);
  const [topP, setTopP] = useState(0.95);
  const [maxTokens, setMaxTokens] = useState(128);
  const [tooling, setTooling] = useState(NO_TOOLS);
  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [input, setInput] = useState("");
  const [streaming, setStreaming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const abortRef = useRef<AbortController | null>(null);
  const transcriptRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    Promise.all([getJson<Answer<"listModels">>("/api/models"), getJson<Answer<"listJobs">>("/api/jobs")])
      .then(([m, j]) => {
        setModels(m.models);
        const done = j.jobs.filter((x) => x.status === "completed" && !x.dryRun);
        setJobs(done);
        setChoice((c) => c || (done[0] ? `job:${done[0].id}` : firstServable(m.models)));
      })
      .catch((e) => setError(errorMessage(e)));
  }, []);

  const selected: ModelChoice | null =
    choice === OTHER_BASE
      ? otherBase.trim()
        ? { kind: "base", name: otherBase.trim() }
        : null
      : decodeChoice(choice);
  const pickBase = (name: string) => {
    if (models.some((m) => m.name === name)) setChoice(encodeChoice({ kind: "base", name }));
    else {
      setOtherBase(name);
      setChoice(OTHER_BASE);
    }
  };
  // The picker's Download put a Hub model in the server's cache: list it, and chat with it.
  const downloaded = useCallback((name: string) => {
    getJson<Answer<"listModels">>("/api/models")
      .then((m) => {
        setModels(m.models);
        if (m.models.some((x) => x.name === name)) setChoice(encodeChoice({ kind: "base", name }));
      })
      .catch((e) => setError(errorMessage(e)));
  }, []);
  const selectedJob = selected?.kind === "job" ? selected.jobId : null;
  useEffect(() => {
    setCheckpoint("final");
    setCheckpoints([]);
    if (!selectedJob) return;
    getJson<Answer<"listArtifacts">>(`/api/jobs/${encodeURIComponent(selectedJob)}/artifacts`)
      .then((r) =>
        setCheckpoints(r.artifacts.filter((a) => a.kind === "checkpoint").sort((a, b) => a.step - b.step)),
      )
      .catch(() => setCheckpoints([]));
  }, [selectedJob]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: scroll to the bottom whenever a message grows
  useEffect(() => {
    const el = transcriptRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [messages]);

  const send = async () => {
    const text = input.trim();
    if (!text || !selected || streaming) return;
    const extras = toolRequestOf(tooling);
    if (typeof extras === "string") return setError(extras);
    // After a call, the composer's text is the tool's result.
    const pending = unansweredCall(messages);
    const turn: ChatMessage = pending
      ? { role: "tool", tool_call_id: pending.id, content: text }
      : { role: "user", content: text };
    const history: ChatMessage[] = [...messages, turn];
    setMessages([...history, { role: "assistant", content: "" }]);
    setInput("");
    setError(null);
    setStreaming(true);
    const adapter: AdapterRef | undefined =
      selected.kind === "job"
        ? checkpoint === "final"
          ? { kind: "final", jobId: selected.jobId }
          : { kind: "checkpoint", jobId: selected.jobId, step: Number(checkpoint) }
        : undefined;
    const body = {
      messages: history,
      adapter,
      baseModel: selected.kind === "base" ? selected.name : undefined,
      temperature,
      topP,
      maxTokens,
      ...extras,
    };
    const abort = new AbortController();
    abortRef.current = abort;
    let reply = "";
    let called = false;
    try {
      const res = await studioFetch("/api/inference/chat", {
        method: "POST",
        body: JSON.stringify(body),
        signal: abort.signal,
      });
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += value;
        const lines = buffered.split("\n");
        buffered = lines.pop() ?? "";
        for (const line of lines) {
          if (!line.trim()) continue;
          const msg = JSON.parse(line) as StudioChatLine;
          if ("error" in msg) throw new Error(msg.error.message);
          if ("toolCalls" in msg) {
            called = true;
            setMessages([
              ...history,
              { role: "assistant", content: reply || null, tool_calls: msg.toolCalls },
            ]);
          }
          if ("delta" in msg && msg.delta) {
            reply += msg.delta;
            setMessages([...history, { role: "assistant", content: reply }]);
          }
        }
      }
    } catch (e) {
      if (!abort.signal.aborted) setError(errorMessage(e));
    } finally {
      setStreaming(false);
      abortRef.current = null;
      if (!reply && !called) setMessages(history);
    }
  };

  const pendingCall = streaming ? null : unansweredCall(messages);
  return (
    <div className="page">
      <div className="page-head">
        <h1>Playground</h1>
        <button type="button" className="btn btn-ghost" onClick={() => setMessages([])} disabled={streaming}>
          Clear chat
        </button>
      </div>
      <div className="playground">
        <aside className="card settings-panel">
          <label className="field">
            <span>Model</span>
            <select
              className="input"
              value={choice}
              onChange={(e) => setChoice(e.target.value)}
              data-testid="pg-model"
            >
              {jobs.length > 0 && (
                <optgroup label="Completed jobs (adapter)">
                  {jobs.map((j) => (
                    <option key={j.id} value={encodeChoice({ kind: "job", jobId: j.id })}>
                      {j.name} ({shortId(j.id)})
                    </option>
                  ))}
                </optgroup>
              )}
              <optgroup label="Base models">
                {models.map((m) => (
                  <option
                    key={m.name}
                    value={encodeChoice({ kind: "base", name: m.name })}
                    disabled={!isServable(m)}
                    title={`${m.architecture}, ${m.parameters.toLocaleString()} parameters, context ${m.contextLength}`}
                  >
                    {m.name} ({isServable(m) ? m.family : "train only"})
                  </option>
                ))}
                <option value={OTHER_BASE}>Other Hub model…</option>
              </optgroup>
            </select>
          </label>
          {(selected?.kind === "base" || choice === OTHER_BASE) && (
            <div className="field">
              <span>Base model</span>
              <BaseModelPicker
                value={choice === OTHER_BASE ? otherBase : (selected as { name: string }).name}
                onChange={pickBase}
                models={models}
                onDownloaded={downloaded}
                testId="pg-base"
              />
            </div>
          )}
          {selectedJob && (
            <label className="field">
              <span>Adapter</span>
              <select
                className="input"
                value={checkpoint}
                onChange={(e) => setCheckpoint(e.target.value)}
                data-testid="pg-checkpoint"
              >
                <option value="final">Final adapter</option>
                {checkpoints.map((c) => (
                  <option key={c.name} value={String(c.step)}>
                    Checkpoint step {c.step}
                  </option>
                ))}
              </select>
            </label>
          )}
          <label className="field">
            <span>
              Temperature <output>{temperature.toFixed(2)}</output>
            </span>
            <input
              type="range"
              min="0"
              max="2"
              step="0.05"
              value={temperature}
              onChange={(e) => setTemperature(Number(e.target.value))}
            />
          </label>
          <label className="field">
            <span>
              Top-p <output>{topP.toFixed(2)}</output>
            </span>
            <input
              type="range"
              min="0.05"
              max="1"
              step="0.05"
              value={topP}
              onChange={(e) => setTopP(Number(e.target.value))}
            />
          </label>
          <ToolsPanel value={tooling} onChange={setTooling} />
          <label className="field">
            <span>Max tokens</span>
            <input
              className="input"
              type="number"
              min="1"
              max="4096"
              value={maxTokens}
              onChange={(e) => setMaxTokens(Math.max(1, Number(e.target.value) || 1))}
            />
          </label>
        </aside>
        <section className="card chat">
          <div className="transcript" ref={transcriptRef} data-testid="transcript">
            {messages.length === 0 && <div className="muted empty">Send a message to start chatting.</div>}
            {messages.map((m, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a transcript only grows at the end
              <div key={i} className={`bubble bubble-${m.role}`} data-role={m.role}>
                {m.content ||
                  (streaming && i === messages.length - 1 ? <span className="typing">●●●</span> : "")}
                {m.tool_calls && <ToolCallList calls={m.tool_calls} />}
              </div>
            ))}
          </div>
          <ErrorText message={error} />
          <form
            className="composer"
            onSubmit={(e) => {
              e.preventDefault();
              void send();
            }}
          >
            <textarea
              className="input"
              rows={2}
              placeholder={
                pendingCall
                  ? `Result of ${pendingCall.function.name}…  (sent as the tool's answer)`
                  : "Message…  (Enter to send, Shift+Enter for a new line)"
              }
              value={input}
              onChange={(e) => setInput(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && !e.shiftKey) {
                  e.preventDefault();
                  void send();
                }
              }}
              data-testid="pg-input"
            />
            {streaming ? (
              <button type="button" className="btn" onClick={() => abortRef.current?.abort()}>
                Stop
              </button>
            ) : (
              <button
                type="submit"
                className="btn btn-primary"
                disabled={!selected || !input.trim()}
                data-testid="pg-send"
              >
                Send
              </button>
            )}
          </form>
        </section>
      </div>
    </div>
  );
}

/** The first base model the Playground can chat with, as a choice ("" when there is none). */
function firstServable(models: BaseModelInfo[]): string {
  const m = models.find(isServable);
  return m ? encodeChoice({ kind: "base", name: m.name }) : "";
}
