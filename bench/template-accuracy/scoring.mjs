// Task metrics of the svc init templates, computed from the model's completion
// and the dataset's reference assistant turn. Pure functions: no model, no I/O.

// ------------------------------------------------------------ ticket triage

/**
 * The completion as the ticket-triage JSON: the whole trimmed text must parse as
 * one JSON object (what a client calling JSON.parse on the reply gets).
 * @param {string} text
 * @returns {{ category?: unknown, priority?: unknown } | null}
 */
export function parseTriage(text) {
  try {
    const value = JSON.parse(text.trim());
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * @param {{ prediction: string, reference: string }[]} pairs
 * @returns {{ examples: number, validJson: number, category: number, priority: number, bothCorrect: number, accuracy: number }}
 *   rates in [0, 1]; accuracy is bothCorrect (category and priority right, from valid JSON).
 */
export function scoreTriage(pairs) {
  let validJson = 0;
  let category = 0;
  let priority = 0;
  let both = 0;
  for (const { prediction, reference } of pairs) {
    const want = parseTriage(reference);
    if (!want) throw new Error(`ticket-triage: reference is not a JSON object: ${reference}`);
    const got = parseTriage(prediction);
    if (!got) continue;
    validJson++;
    const c = got.category === want.category;
    const p = got.priority === want.priority;
    if (c) category++;
    if (p) priority++;
    if (c && p) both++;
  }
  const n = pairs.length;
  const rate = (k) => (n === 0 ? 0 : k / n);
  return {
    examples: n,
    validJson: rate(validJson),
    category: rate(category),
    priority: rate(priority),
    bothCorrect: rate(both),
    accuracy: rate(both),
  };
}

// ------------------------------------------------------------ PII redaction

export const PII_PLACEHOLDERS = ["[NAME]", "[EMAIL]", "[PHONE]"];
const PLACEHOLDER_RE = /\[(NAME|EMAIL|PHONE)\]/g;

/** How many times each placeholder occurs in a text. */
export function countPlaceholders(text) {
  const counts = { "[NAME]": 0, "[EMAIL]": 0, "[PHONE]": 0 };
  for (const m of text.matchAll(PLACEHOLDER_RE)) counts[m[0]]++;
  return counts;
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The personal values the reference redacted: the input is the reference with
 * each placeholder standing for one value, so the literal text between
 * placeholders pins each value down.
 * @param {string} input the user turn
 * @param {string} reference the reference redaction
 * @returns {{ placeholder: string, value: string }[]}
 */
export function redactedValues(input, reference) {
  const placeholders = [...reference.matchAll(PLACEHOLDER_RE)].map((m) => m[0]);
  const literals = reference.split(PLACEHOLDER_RE).filter((_, i) => i % 2 === 0);
  const pattern = new RegExp(`^${literals.map(escapeRegExp).join("(.+?)")}$`, "s");
  const m = pattern.exec(input);
  if (!m) throw new Error(`pii-redaction: reference does not align with its input: ${reference}`);
  return placeholders.map((placeholder, i) => ({ placeholder, value: m[i + 1] }));
}

/**
 * @param {{ input: string, prediction: string, reference: string }[]} triples
 * @returns {{
 *   examples: number, exactMatch: number, accuracy: number, leakRate: number,
 *   entities: Record<string, { reference: number, predicted: number, matched: number, precision: number | null, recall: number | null }>
 * }} exactMatch (= accuracy): the trimmed completion equals the reference;
 *   per placeholder, matched = Σ min(predicted, reference) over examples, precision and
 *   recall null when nothing was predicted or expected;
 *   leakRate: share of the reference's personal values left verbatim in the completion.
 */
export function scorePii(triples) {
  let exact = 0;
  let values = 0;
  let leaked = 0;
  const totals = Object.fromEntries(
    PII_PLACEHOLDERS.map((p) => [p, { reference: 0, predicted: 0, matched: 0 }]),
  );
  for (const { input, prediction, reference } of triples) {
    if (prediction.trim() === reference.trim()) exact++;
    const want = countPlaceholders(reference);
    const got = countPlaceholders(prediction);
    for (const p of PII_PLACEHOLDERS) {
      totals[p].reference += want[p];
      totals[p].predicted += got[p];
      totals[p].matched += Math.min(want[p], got[p]);
    }
    for (const { value } of redactedValues(input, reference)) {
      values++;
      if (prediction.includes(value)) leaked++;
    }
  }
  const n = triples.length;
  const entities = Object.fromEntries(
    PII_PLACEHOLDERS.map((p) => {
      const t = totals[p];
      return [
        p,
        {
          ...t,
          precision: t.predicted === 0 ? null : t.matched / t.predicted,
          recall: t.reference === 0 ? null : t.matched / t.reference,
        },
      ];
    }),
  );
  return {
    examples: n,
    exactMatch: n === 0 ? 0 : exact / n,
    accuracy: n === 0 ? 0 : exact / n,
    leakRate: values === 0 ? 0 : leaked / values,
    entities,
  };
}

// ------------------------------------------------------------ tool calling

/**
 * What an assistant turn does, in one comparable form: the calls it makes
 * (name and parsed arguments, in order), or null when it answers in text.
 * @param {{ content?: string | null, tool_calls?: { function: { name: string, arguments: string } }[] }} message
 * @returns {string} JSON text: {"calls": [...]} or {"calls": null}
 */
export function toolTurn(message) {
  const calls = message.tool_calls?.length
    ? message.tool_calls.map((c) => {
        let args;
        try {
          args = JSON.parse(c.function.arguments);
        } catch {
          args = { unparsed: c.function.arguments };
        }
        return { name: c.function.name, arguments: sortKeys(args) };
      })
    : null;
  return JSON.stringify({ calls });
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortKeys(value[k])]),
  );
}

/**
 * Exact tool use: the prediction and the reference are toolTurn() texts.
 * `decision` is right call-or-answer and the right tool's name; `exact` also
 * needs the same arguments (an answer in text where text was expected counts).
 * @param {{ prediction: string, reference: string }[]} pairs
 * @returns {{ examples: number, decision: number, exact: number, accuracy: number, calledWhenExpected: number }}
 */
export function scoreToolCalls(pairs) {
  let decision = 0;
  let exact = 0;
  let expected = 0;
  let called = 0;
  for (const { prediction, reference } of pairs) {
    const want = JSON.parse(reference).calls;
    const got = JSON.parse(prediction).calls;
    if (want !== null) {
      expected++;
      if (got !== null) called++;
    }
    const names = (calls) => (calls === null ? null : calls.map((c) => c.name).join(","));
    if (names(want) === names(got)) decision++;
    if (JSON.stringify(want) === JSON.stringify(got)) exact++;
  }
  const n = pairs.length;
  const rate = (k, of = n) => (of === 0 ? 0 : k / of);
  return {
    examples: n,
    decision: rate(decision),
    exact: rate(exact),
    accuracy: rate(exact),
    calledWhenExpected: rate(called, expected),
  };
}
