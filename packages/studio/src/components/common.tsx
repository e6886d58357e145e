// Small shared pieces: status badge, copy button, code block, error text.
import type { JobStatus } from "@svc/wire";
import { useState } from "react";

export function StatusBadge({ status }: { status: JobStatus | string }) {
  return <span className={`badge status-${status}`}>{status}</span>;
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // Clipboard API needs a secure context; fall back to a hidden textarea.
      const ta = document.createElement("textarea");
      ta.value = text;
      document.body.appendChild(ta);
      ta.select();
      document.execCommand("copy");
      ta.remove();
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <button type="button" className="btn btn-small" onClick={copy}>
      {copied ? "Copied" : label}
    </button>
  );
}

export function CodeBlock({ code, testId }: { code: string; testId?: string }) {
  return (
    <div className="code-block">
      <pre data-testid={testId}>{code}</pre>
      <div className="code-copy">
        <CopyButton text={code} />
      </div>
    </div>
  );
}

export function ErrorText({ message }: { message: string | null }) {
  if (!message) return null;
  return (
    <div className="error-text" role="alert">
      {message}
    </div>
  );
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}
