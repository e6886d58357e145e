// Generates the templates' datasets offline and deterministically (fixed seed):
// `node templates/generate-datasets.mjs` rewrites templates/*/data/{train,eval}.jsonl.
// Each row is one chat in the OpenAI fine-tuning format: {"messages":[...]}
// (with "tools" for the tool-calling template); the post-training templates'
// rows (preference pairs, prompts) are made in post-training-datasets.mjs.
import { fileURLToPath } from "node:url";
import { pick, write } from "./dataset-writer.mjs";
import { sentenceRow, toneRow } from "./post-training-datasets.mjs";

// ------------------------------------------------------------ ticket triage

export const TRIAGE_SYSTEM =
  'Classify the support ticket. Reply with JSON only: {"category": "billing"|"technical"|"account"|"shipping", "priority": "low"|"medium"|"high"}.';

const TRIAGE = {
  billing: [
    "I was charged twice for my {plan} plan this month.",
    "Can I get a refund for the {plan} subscription?",
    "My invoice shows the wrong amount.",
    "The card payment failed but money left my account.",
    "Please send me a receipt for my last payment.",
  ],
  technical: [
    "The app crashes when I open the {feature} page.",
    "The {feature} button does nothing in {browser}.",
    "Sync has stopped working since the last update.",
    "I get error 500 when I upload a file.",
    "The {feature} screen loads forever.",
  ],
  account: [
    "I cannot log in to my account.",
    "How do I change the email on my account?",
    "Please delete my account and my data.",
    "I did not get the password reset email.",
    "Add a second admin to our {plan} team.",
  ],
  shipping: [
    "My order has not arrived after two weeks.",
    "The package came damaged.",
    "Can I change the delivery address of my order?",
    "Tracking says delivered but I have nothing.",
    "When will my order ship?",
  ],
};
const URGENT = [
  "This is urgent, our whole team is blocked.",
  "We lose money every hour, please hurry.",
  "Production is down!",
];
const MILD = ["No rush.", "Whenever you have time.", "Just wondering.", "Thanks!"];
const FILL = {
  plan: ["Pro", "Team", "Basic", "Enterprise"],
  feature: ["reports", "settings", "export", "dashboard", "billing"],
  browser: ["Firefox", "Chrome", "Safari"],
};
const GREETINGS = ["", "Hi, ", "Hello, ", "Hey team, "];

function fill(r, text) {
  return text.replace(/\{(\w+)\}/g, (_, k) => pick(r, FILL[k]));
}

function triageRow(r) {
  const category = pick(r, Object.keys(TRIAGE));
  const tone = r();
  // The rule to learn: urgent wording → high, polite no-rush wording → low, plain → medium.
  const priority = tone < 0.3 ? "high" : tone < 0.6 ? "low" : "medium";
  const extra = priority === "high" ? ` ${pick(r, URGENT)}` : priority === "low" ? ` ${pick(r, MILD)}` : "";
  const ticket = `${pick(r, GREETINGS)}${fill(r, pick(r, TRIAGE[category]))}${extra}`;
  return {
    messages: [
      { role: "system", content: TRIAGE_SYSTEM },
      { role: "user", content: ticket },
      { role: "assistant", content: JSON.stringify({ category, priority }) },
    ],
  };
}

// ------------------------------------------------------------ PII redaction

export const PII_SYSTEM =
  "Rewrite the text with every personal name replaced by [NAME], email by [EMAIL] and phone number by [PHONE].";

const FIRST = [
  "Anna",
  "Ben",
  "Chloe",
  "David",
  "Elena",
  "Farid",
  "Grace",
  "Hugo",
  "Ines",
  "Jonas",
  "Keiko",
  "Liam",
  "Maya",
  "Noah",
];
const LAST = ["Smith", "Garcia", "Novak", "Okafor", "Tanaka", "Berg", "Rossi", "Kim", "Dubois", "Silva"];
const DOMAINS = ["example.com", "mail.test", "acme.org", "corp.example"];
const PII_SENTENCES = [
  "Please call {name} at {phone} about the contract.",
  "Send the report to {email} before Friday.",
  "{name} asked to be reached on {phone} or {email}.",
  "Meeting notes: {name} will follow up with the client.",
  "Forward the invoice to {name} ({email}).",
  "Contact {name} on {phone} if the delivery is late.",
  "The ticket was opened by {email} yesterday.",
];

function piiRow(r) {
  const first = pick(r, FIRST);
  const last = pick(r, LAST);
  const name = r() < 0.5 ? first : `${first} ${last}`;
  const email = `${first.toLowerCase()}.${last.toLowerCase()}@${pick(r, DOMAINS)}`;
  const phone = `+1 555 ${String(100 + Math.floor(r() * 900))} ${String(1000 + Math.floor(r() * 9000))}`;
  const sentence = pick(r, PII_SENTENCES);
  const values = { name, email, phone };
  const tags = { name: "[NAME]", email: "[EMAIL]", phone: "[PHONE]" };
  return {
    messages: [
      { role: "system", content: PII_SYSTEM },
      { role: "user", content: sentence.replace(/\{(\w+)\}/g, (_, k) => values[k]) },
      { role: "assistant", content: sentence.replace(/\{(\w+)\}/g, (_, k) => tags[k]) },
    ],
  };
}

// ------------------------------------------------------------ tool calling

export const TOOLS_SYSTEM = "You are a shop's support assistant.";

export const SUPPORT_TOOLS = [
  {
    type: "function",
    function: {
      name: "lookup_order",
      description: "Status of an order",
      parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
    },
  },
  {
    type: "function",
    function: {
      name: "create_ticket",
      description: "Open a ticket about an order",
      parameters: {
        type: "object",
        properties: {
          order_id: { type: "string" },
          issue: { type: "string", enum: ["damaged", "missing", "refund", "wrong_item"] },
        },
        required: ["order_id", "issue"],
      },
    },
  },
];

// The shop's orders: a fixed set that train and held-out conversations share. Held-out rows are
// new conversations (no held-out user message is in the train set: write() draws again);
// the 2.4M-parameter bundled model learns to recognise these order numbers, while it did not
// learn to copy unseen random ones (exact 0 of 32 calls at 600 and 1200 steps).
// Customers write them as "#M3736": the tokens of "M3736" are the same in the message and in
// the call's arguments.
export const ORDER_IDS = [
  "A1042",
  "B2317",
  "C3581",
  "D4096",
  "K5230",
  "M3736",
  "A6174",
  "B7459",
  "C8823",
  "D9310",
];
const LOOKUPS = [
  "Where is my order #{id}?",
  "Has #{id} shipped yet?",
  "Any news on order #{id}?",
  "Can you check the status of #{id}?",
  "When will order #{id} arrive?",
];
const ISSUES = {
  damaged: ["Order #{id} arrived damaged.", "The item in #{id} is broken.", "My package #{id} came crushed."],
  missing: ["Order #{id} never arrived.", "Tracking says #{id} was delivered but I have nothing."],
  refund: ["I want my money back for #{id}.", "Please refund order #{id}.", "Can I get a refund on #{id}?"],
  wrong_item: ["I got the wrong item in order #{id}.", "Order #{id} had someone else's product in it."],
};
// Phrasings only held-out conversations use: the adapter is measured on wording it never saw,
// not only on new combinations of seen wording.
const HELD_OUT_LOOKUPS = ["What is the status of order #{id}?", "Is #{id} on its way?"];
const HELD_OUT_ISSUES = {
  damaged: ["Order #{id} came broken."],
  missing: ["My order #{id} never came."],
  refund: ["I would like a refund for #{id}."],
  wrong_item: ["Wrong item in my order #{id}."],
};
const NO_TOOL = [
  ["What are your opening hours?", "We answer messages every day from 8:00 to 20:00."],
  ["Do you ship abroad?", "Yes, we ship to most countries in Europe."],
  ["Thanks for your help!", "You're welcome, have a nice day!"],
  ["How do I reset my password?", 'Use the "Forgot password" link on the login page.'],
];
const STATUS = ["shipped", "processing", "delivered", "out for delivery"];

let callNumber = 0;
/** One call turn and its result: the assistant calls, the tool answers. */
function callTurns(name, args, result) {
  const id = `call_${String(++callNumber).padStart(4, "0")}`;
  return [
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(args) } }],
    },
    { role: "tool", tool_call_id: id, content: JSON.stringify(result) },
  ];
}

/** One conversation; a held-out one takes a held-out phrasing half the time. */
function toolRow(r, heldOut = false) {
  const unseen = heldOut && r() < 0.5;
  const id = pick(r, ORDER_IDS);
  const greeting = pick(r, GREETINGS);
  const kind = r();
  let turns;
  if (kind < 0.15) {
    const [question, answer] = pick(r, NO_TOOL);
    turns = [
      { role: "user", content: `${greeting}${question}` },
      { role: "assistant", content: answer },
    ];
  } else if (kind < 0.55) {
    const status = pick(r, STATUS);
    turns = [
      {
        role: "user",
        content: `${greeting}${pick(r, unseen ? HELD_OUT_LOOKUPS : LOOKUPS).replace("{id}", id)}`,
      },
      ...callTurns("lookup_order", { order_id: id }, { status }),
      { role: "assistant", content: `Order #${id} is ${status}.` },
    ];
  } else {
    const issue = pick(r, Object.keys(ISSUES));
    const ticket = `T-${10000 + Math.floor(r() * 90000)}`;
    turns = [
      {
        role: "user",
        content: `${greeting}${pick(r, (unseen ? HELD_OUT_ISSUES : ISSUES)[issue]).replace("{id}", id)}`,
      },
      ...callTurns("create_ticket", { order_id: id, issue }, { ticket }),
      { role: "assistant", content: `I opened ticket ${ticket} for order #${id}.` },
    ];
  }
  return { tools: SUPPORT_TOOLS, messages: [{ role: "system", content: TOOLS_SYSTEM }, ...turns] };
}

// ------------------------------------------------------------ write

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  write("ticket-triage", triageRow, 20251121, 240, 40);
  write("pii-redaction", piiRow, 20251122, 240, 40);
  write("tool-calling", toolRow, 20251124, 240, 40, { distinctEval: true });
  write("reply-tone", toneRow, 20251201, 160, 32);
  write("full-sentences", sentenceRow, 20251202, 48, 12, { distinctEval: true });
}
