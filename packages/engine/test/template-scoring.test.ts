// The task metrics of bench/template-accuracy.mjs (ticket-triage JSON fields,
// PII placeholders and leaked values) on hand-made completions, and the
// metrics of each template's own held-out references scored against themselves.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

// dist/test/ → the repository root: the bench module is plain JS outside this package.
const repoRoot = new URL("../../../../", import.meta.url);
const scoringUrl = new URL("bench/template-accuracy/scoring.mjs", repoRoot).href;

interface EntityScore {
  reference: number;
  predicted: number;
  matched: number;
  precision: number | null;
  recall: number | null;
}
interface TriageScore {
  examples: number;
  validJson: number;
  category: number;
  priority: number;
  bothCorrect: number;
  accuracy: number;
}
interface PiiScore {
  examples: number;
  exactMatch: number;
  accuracy: number;
  leakRate: number;
  entities: Record<string, EntityScore>;
}
interface Scoring {
  parseTriage(text: string): Record<string, unknown> | null;
  scoreTriage(pairs: { prediction: string; reference: string }[]): TriageScore;
  redactedValues(input: string, reference: string): { placeholder: string; value: string }[];
  scorePii(triples: { input: string; prediction: string; reference: string }[]): PiiScore;
  toolTurn(message: {
    content?: string | null;
    tool_calls?: { function: { name: string; arguments: string } }[];
  }): string;
  scoreToolCalls(pairs: { prediction: string; reference: string }[]): {
    examples: number;
    decision: number;
    exact: number;
    accuracy: number;
    calledWhenExpected: number;
  };
}
const scoring = (await import(scoringUrl)) as Scoring;

const triage = (category: string, priority: string) => JSON.stringify({ category, priority });

test("triage: valid JSON, per-field and both-correct rates", () => {
  const ref = triage("billing", "high");
  const s = scoring.scoreTriage([
    { prediction: ref, reference: ref }, // both right
    { prediction: ` ${triage("billing", "low")}\n`, reference: ref }, // category only; whitespace is fine
    { prediction: triage("shipping", "high"), reference: ref }, // priority only
    { prediction: '{"category":"billing","priority":"high"} trailing', reference: ref }, // not JSON
    { prediction: '["billing","high"]', reference: ref }, // JSON, but not an object
  ]);
  assert.deepEqual(s, {
    examples: 5,
    validJson: 3 / 5,
    category: 2 / 5,
    priority: 2 / 5,
    bothCorrect: 1 / 5,
    accuracy: 1 / 5,
  });
});

test("triage: a reference that is not JSON is an error naming it", () => {
  assert.throws(
    () => scoring.scoreTriage([{ prediction: "{}", reference: "billing" }]),
    /reference .*billing/,
  );
});

test("triage: no examples gives zero rates, not NaN", () => {
  assert.equal(scoring.scoreTriage([]).accuracy, 0);
});

test("pii: the redacted values are recovered from input and reference", () => {
  assert.deepEqual(
    scoring.redactedValues(
      "Anna Smith asked to be reached on +1 555 123 4567 or anna.smith@acme.org.",
      "[NAME] asked to be reached on [PHONE] or [EMAIL].",
    ),
    [
      { placeholder: "[NAME]", value: "Anna Smith" },
      { placeholder: "[PHONE]", value: "+1 555 123 4567" },
      { placeholder: "[EMAIL]", value: "anna.smith@acme.org" },
    ],
  );
  assert.throws(() => scoring.redactedValues("Hello Ben.", "Goodbye [NAME]."), /does not align/);
});

test("pii: exact match, placeholder precision and recall, leaked values", () => {
  const input = "Contact Ben on +1 555 200 3000 if the delivery is late.";
  const reference = "Contact [NAME] on [PHONE] if the delivery is late.";
  const s = scoring.scorePii([
    { input, reference, prediction: `${reference}\n` }, // exact (trimmed)
    { input, reference, prediction: "Contact [NAME] on +1 555 200 3000 if the delivery is late." }, // phone leaked
    { input, reference, prediction: "Contact [NAME] on [EMAIL] if the delivery is late." }, // wrong tag
  ]);
  assert.equal(s.examples, 3);
  assert.equal(s.exactMatch, 1 / 3);
  assert.equal(s.accuracy, 1 / 3);
  assert.equal(s.leakRate, 1 / 6); // 6 values in the references, the phone leaked once
  assert.deepEqual(s.entities["[NAME]"], { reference: 3, predicted: 3, matched: 3, precision: 1, recall: 1 });
  assert.deepEqual(s.entities["[PHONE]"], {
    reference: 3,
    predicted: 1,
    matched: 1,
    precision: 1,
    recall: 1 / 3,
  });
  assert.deepEqual(s.entities["[EMAIL]"], {
    reference: 0,
    predicted: 1,
    matched: 0,
    precision: 0,
    recall: null,
  });
});

test("tool calls: exact name and arguments (key order aside), the call-or-answer decision", () => {
  const call = (name: string, args: string) =>
    scoring.toolTurn({ tool_calls: [{ function: { name, arguments: args } }] });
  const text = scoring.toolTurn({ content: "We open at 8." });
  const reference = [
    call("lookup_order", '{"order_id": "A1"}'),
    call("create_ticket", '{"order_id": "B2", "issue": "refund"}'),
    text,
  ];
  const s = scoring.scoreToolCalls([
    { prediction: call("lookup_order", '{"order_id":"A1"}'), reference: reference[0] },
    { prediction: call("create_ticket", '{"issue": "damaged", "order_id": "B2"}'), reference: reference[1] },
    { prediction: call("lookup_order", '{"order_id": "C3"}'), reference: reference[2] },
  ]);
  assert.deepEqual(s, { examples: 3, decision: 2 / 3, exact: 1 / 3, accuracy: 1 / 3, calledWhenExpected: 1 });
  assert.equal(call("f", '{"b": 1, "a": [2]}'), call("f", '{"a": [2], "b": 1}'));
  assert.equal(scoring.scoreToolCalls([{ prediction: text, reference: reference[0] }]).calledWhenExpected, 0);
});

function heldOut(template: string): { input: string; reference: string }[] {
  const file = fileURLToPath(new URL(`templates/${template}/data/eval.jsonl`, repoRoot));
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const messages = (JSON.parse(line) as { messages: { role: string; content: string }[] }).messages;
      return {
        input: messages.find((m) => m.role === "user")?.content ?? "",
        reference: messages.at(-1)?.content ?? "",
      };
    });
}

test("the templates' own held-out references score 100% against themselves, their inputs 0%", () => {
  const tickets = heldOut("ticket-triage");
  assert.ok(tickets.length > 0);
  assert.equal(
    scoring.scoreTriage(tickets.map((e) => ({ prediction: e.reference, reference: e.reference }))).accuracy,
    1,
  );
  assert.equal(
    scoring.scoreTriage(tickets.map((e) => ({ prediction: e.input, reference: e.reference }))).validJson,
    0,
  );

  const pii = heldOut("pii-redaction");
  assert.ok(pii.length > 0);
  const perfect = scoring.scorePii(pii.map((e) => ({ ...e, prediction: e.reference })));
  assert.equal(perfect.exactMatch, 1);
  assert.equal(perfect.leakRate, 0);
  for (const e of Object.values(perfect.entities)) assert.equal(e.recall ?? 1, 1);
  // Echoing the input redacts nothing: every value leaks, no placeholder is found.
  const echo = scoring.scorePii(pii.map((e) => ({ ...e, prediction: e.input })));
  assert.equal(echo.exactMatch, 0);
  assert.equal(echo.leakRate, 1);
  for (const e of Object.values(echo.entities)) assert.equal(e.recall ?? 0, 0);

  const toolRows = readFileSync(
    fileURLToPath(new URL("templates/tool-calling/data/eval.jsonl", repoRoot)),
    "utf8",
  )
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line).messages.find((m: { role: string }) => m.role === "assistant"));
  const turns = toolRows.map((m) => scoring.toolTurn(m));
  assert.equal(scoring.scoreToolCalls(turns.map((t) => ({ prediction: t, reference: t }))).exact, 1);
  assert.ok(
    turns.some((t) => JSON.parse(t).calls === null) && turns.some((t) => JSON.parse(t).calls !== null),
  );
});
