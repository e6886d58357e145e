// The post-training templates' rows (generate-datasets.mjs writes them):
// reply-tone's preference pairs (method "dpo") and full-sentences' prompts
// (method "grpo"). Held-out rows use customer wordings, replies and topics
// the training rows never show, so their figures measure what carries over.
import { pick } from "./dataset-writer.mjs";

// ------------------------------------------------------------ reply tone (DPO)

export const TONE_SYSTEM = "You are a shop's support assistant. Reply to the customer in one sentence.";

// What the customer writes about: the preferred reply names it.
const ITEMS = [
  "order",
  "parcel",
  "card",
  "invoice",
  "account",
  "password",
  "refund",
  "charger",
  "screen",
  "phone",
  "lamp",
  "bike",
  "coat",
  "watch",
  "chair",
  "printer",
];
const PROBLEMS = [
  "My {item} has not arrived yet.",
  "My {item} came broken.",
  "There is a problem with my {item}.",
  "My {item} does not work.",
  "Something is wrong with my {item}.",
  "I want to return my {item}.",
  // held out: wordings only the eval rows show
  "The {item} I got is not the one I ordered.",
  "I am still waiting for my {item}.",
];
const SEEN_PROBLEMS = PROBLEMS.length - 2;
const OPENERS = ["Hi, ", "Hello, ", ""];
const TAILS = ["", " Please help.", " What now?", " This is the second time."];
const POLITE = [
  "I am sorry about your {item}, I will sort it out for you today.",
  "Thank you for telling us about your {item}, I will fix it right away.",
  "Sorry for the trouble with your {item}, I will help you now.",
];
const CURT = [
  "Not our problem.",
  "Read the help page.",
  "We cannot do anything about that.",
  "Wait like everyone else.",
];

/**
 * The preferred reply is courteous and about the customer's item. The
 * dispreferred one is curt (half the rows) or courteous about another item:
 * what DPO teaches, be polite and read the message, carries over to wordings
 * the training pairs never show.
 */
export function toneRow(r, heldOut = false) {
  const item = pick(r, ITEMS);
  let other = pick(r, ITEMS);
  while (other === item) other = pick(r, ITEMS);
  const problems = heldOut ? PROBLEMS.slice(SEEN_PROBLEMS) : PROBLEMS.slice(0, SEEN_PROBLEMS);
  const problem = pick(r, problems).replace("{item}", item);
  const opener = pick(r, OPENERS);
  const message = `${opener}${opener ? problem[0].toLowerCase() + problem.slice(1) : problem}${pick(r, TAILS)}`;
  const polite = pick(r, POLITE);
  const rejected = r() < 0.5 ? pick(r, CURT) : polite.replace("{item}", other);
  return {
    input: {
      messages: [
        { role: "system", content: TONE_SYSTEM },
        { role: "user", content: message },
      ],
    },
    preferred_output: [{ role: "assistant", content: polite.replace("{item}", item) }],
    non_preferred_output: [{ role: "assistant", content: rejected }],
  };
}

// ------------------------------------------------------------ full sentences (GRPO)

// Writing prompts; the graders read only the reply. Each row carries its topic
// anyway: a grader may read any field of the row as {{item.topic}}.
const TOPICS = [
  "sea",
  "dog",
  "king",
  "city",
  "rain",
  "ship",
  "war",
  "tree",
  "road",
  "song",
  "sun",
  "house",
  "river",
  "church",
  "money",
  "law",
  // held out: topics only the eval rows ask about
  "horse",
  "moon",
  "night",
  "garden",
];
const SEEN_TOPICS = TOPICS.length - 4;
const ASKS = ["Write about the {t}.", "Say something about the {t}.", "Tell me about the {t}."];

export function sentenceRow(r, heldOut = false) {
  const topic = heldOut ? TOPICS[SEEN_TOPICS + Math.floor(r() * 4)] : TOPICS[Math.floor(r() * SEEN_TOPICS)];
  return { messages: [{ role: "user", content: pick(r, ASKS).replace("{t}", topic) }], topic };
}
