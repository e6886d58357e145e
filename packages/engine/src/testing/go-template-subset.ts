// Renders the subset of Go's text/template that the Modelfile TEMPLATE uses,
// with Go's semantics (text between actions verbatim; no trim markers in this
// subset), so tests check what Ollama will render rather than a second copy of
// the affixes: {{ range $i, $_ := .Messages }}, {{ if / else if / end }},
// eq, ne, and, not, len, slice, variable declaration (:=) and assignment (=),
// .Role and .Content, string literals and integers.

interface Message {
  role: string;
  content: string;
}

type Node =
  | { kind: "text"; text: string }
  | { kind: "action"; expr: string }
  | { kind: "range"; body: Node[] }
  | { kind: "if"; branches: { cond: string | null; body: Node[] }[] };

function parse(template: string): Node[] {
  const tokens: ({ text: string } | { action: string })[] = [];
  const pattern = /\{\{(.*?)\}\}/gs;
  let at = 0;
  for (const m of template.matchAll(pattern)) {
    if (m.index > at) tokens.push({ text: template.slice(at, m.index) });
    if (m[1].startsWith("-") || m[1].endsWith("-"))
      throw new Error(`trim markers are outside the subset: ${m[0]}`);
    tokens.push({ action: m[1].trim() });
    at = m.index + m[0].length;
  }
  if (at < template.length) tokens.push({ text: template.slice(at) });
  let i = 0;
  const block = (): { nodes: Node[]; end: string } => {
    const nodes: Node[] = [];
    while (i < tokens.length) {
      const t = tokens[i++];
      if ("text" in t) {
        nodes.push({ kind: "text", text: t.text });
        continue;
      }
      const a = t.action;
      if (a === "end" || a.startsWith("else")) return { nodes, end: a };
      if (a.startsWith("range ")) {
        if (a !== "range $i, $_ := .Messages") throw new Error(`unsupported range: ${a}`);
        const body = block();
        if (body.end !== "end") throw new Error("range without end");
        nodes.push({ kind: "range", body: body.nodes });
      } else if (a.startsWith("if ")) {
        const branches: { cond: string | null; body: Node[] }[] = [];
        let cond: string | null = a.slice(3);
        for (;;) {
          const body = block();
          branches.push({ cond, body: body.nodes });
          if (body.end === "end") break;
          cond = body.end === "else" ? null : body.end.replace(/^else if /, "");
        }
        nodes.push({ kind: "if", branches });
      } else nodes.push({ kind: "action", expr: a });
    }
    return { nodes, end: "" };
  };
  return block().nodes;
}

type Value = string | number | boolean | Message[];

/** Splits an expression into its terms: words, quoted strings, parenthesized groups. */
function terms(expr: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < expr.length) {
    if (expr[i] === " ") i++;
    else if (expr[i] === '"') {
      const end = expr.indexOf('"', i + 1);
      out.push(expr.slice(i, end + 1));
      i = end + 1;
    } else if (expr[i] === "(") {
      let depth = 0;
      let j = i;
      for (; j < expr.length; j++) {
        if (expr[j] === "(") depth++;
        if (expr[j] === ")" && --depth === 0) break;
      }
      out.push(expr.slice(i, j + 1));
      i = j + 1;
    } else {
      let j = i;
      while (j < expr.length && expr[j] !== " ") j++;
      out.push(expr.slice(i, j));
      i = j;
    }
  }
  return out;
}

export function renderGoTemplate(template: string, messages: Message[]): string {
  const vars = new Map<string, Value>();
  let dot: Message | null = null;
  const value = (term: string): Value => {
    if (term.startsWith("(")) return evaluate(term.slice(1, -1));
    if (term.startsWith('"')) return JSON.parse(term);
    if (/^\d+$/.test(term)) return Number(term);
    if (term === ".Role") return (dot as Message).role;
    if (term === ".Content") return (dot as Message).content;
    if (term === "$.Messages") return messages;
    if (term.startsWith("$")) {
      if (!vars.has(term)) throw new Error(`undefined variable ${term}`);
      return vars.get(term) as Value;
    }
    throw new Error(`unsupported term ${term}`);
  };
  const evaluate = (expr: string): Value => {
    const assign = /^(\$\w+) (:?=) (.+)$/.exec(expr);
    if (assign) {
      if (assign[2] === "=" && !vars.has(assign[1])) throw new Error(`assignment to undeclared ${assign[1]}`);
      vars.set(assign[1], evaluate(assign[3]));
      return "";
    }
    const [head, ...args] = terms(expr);
    const v = args.map(value);
    switch (head) {
      case "eq":
        return v[0] === v[1];
      case "ne":
        return v[0] !== v[1];
      case "and":
        return v.every(Boolean);
      case "not":
        return !v[0];
      case "len":
        return (v[0] as Message[]).length;
      case "slice":
        return (v[0] as Message[]).slice(v[1] as number);
      default:
        if (args.length === 0) return value(head);
        throw new Error(`unsupported function ${head}`);
    }
  };
  const run = (nodes: Node[]): string => {
    let out = "";
    for (const node of nodes) {
      if (node.kind === "text") out += node.text;
      else if (node.kind === "action") {
        const v = evaluate(node.expr);
        out += typeof v === "string" || typeof v === "number" ? String(v) : "";
      } else if (node.kind === "if") {
        const branch = node.branches.find((b) => b.cond === null || evaluate(b.cond));
        if (branch) out += run(branch.body);
      } else {
        messages.forEach((m, i) => {
          dot = m;
          vars.set("$i", i);
          out += run(node.body);
        });
        dot = null;
      }
    }
    return out;
  };
  return run(parse(template));
}
