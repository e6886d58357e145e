// Quick start samples of the endpoint detail page. Built from the deployment's
// own URL and auth mode only (no upstream call). Client libraries take the base
// URL ending in /v1 and append the operation's route themselves.
import type { AuthMode } from "@svc/wire";

export type QuickstartLanguage = "curl" | "python" | "javascript";

export const QUICKSTART_LANGUAGES: { id: QuickstartLanguage; label: string }[] = [
  { id: "curl", label: "cURL" },
  { id: "python", label: "Python client" },
  { id: "javascript", label: "JavaScript client" },
];

/** Operations the samples cover; further compatible routes (e.g. /v1/embeddings) slot in here. */
export const QUICKSTART_OPERATIONS = [
  { id: "chat.completions", label: "POST /v1/chat/completions", route: "/chat/completions" },
  { id: "responses", label: "POST /v1/responses", route: "/responses" },
] as const;

export type QuickstartOperation = (typeof QUICKSTART_OPERATIONS)[number]["id"];

export const API_KEY_PLACEHOLDER = "YOUR_API_KEY";
/** Client libraries refuse an empty key, so public endpoints get a placeholder. */
export const NO_AUTH_PLACEHOLDER = "not-required";

export interface QuickstartInput {
  /** The deployment's full serving URL: …/v1/chat/completions. */
  url: string;
  authMode: AuthMode;
  slug: string;
}

/** …/v1/chat/completions → …/v1 (what client libraries take as base URL). */
export function hostBaseUrl(url: string): string {
  const i = url.lastIndexOf("/v1/");
  return i >= 0 ? url.slice(0, i + 3) : url.replace(/\/+$/, "");
}

/**
 * The base URL for client libraries. curl and browsers resolve `<slug>.localhost`
 * to loopback but glibc's resolver (Node, Python on Linux) does not, so for a
 * local deployment domain the clients use the edge's path form
 * `http://127.0.0.1:<port>/d/<slug>/v1`, the same endpoint.
 */
export function clientBaseUrl(url: string, slug: string): string {
  const parsed = new URL(url);
  if (parsed.hostname.endsWith(".localhost")) {
    return `${parsed.protocol}//127.0.0.1${parsed.port ? `:${parsed.port}` : ""}/d/${slug}/v1`;
  }
  return hostBaseUrl(url);
}

export function quickstartSample(
  language: QuickstartLanguage,
  input: QuickstartInput,
  operation: QuickstartOperation = "chat.completions",
): string {
  const keyed = input.authMode === "fixed_api_key";
  const base = clientBaseUrl(input.url, input.slug);
  const responses = operation === "responses";
  if (language === "curl") {
    const url = responses ? `${hostBaseUrl(input.url)}/responses` : input.url;
    const lines = [`curl ${url} \\`, `  -H "Content-Type: application/json" \\`];
    if (keyed) lines.push(`  -H "Authorization: Bearer ${API_KEY_PLACEHOLDER}" \\`);
    lines.push(
      `  -d '{`,
      `    "model": "${input.slug}",`,
      responses ? `    "input": "Hello!"` : `    "messages": [{ "role": "user", "content": "Hello!" }]`,
      `  }'`,
    );
    return lines.join("\n");
  }
  if (language === "python") {
    const call = responses
      ? [
          "response = client.responses.create(",
          `    model="${input.slug}",`,
          `    input="Hello!",`,
          ")",
          "print(response.output_text)",
        ]
      : [
          "completion = client.chat.completions.create(",
          `    model="${input.slug}",`,
          `    messages=[{"role": "user", "content": "Hello!"}],`,
          ")",
          "print(completion.choices[0].message.content)",
        ];
    return [
      "from openai import OpenAI",
      "",
      "client = OpenAI(",
      `    base_url="${base}",`,
      keyed
        ? `    api_key="${API_KEY_PLACEHOLDER}",`
        : `    api_key="${NO_AUTH_PLACEHOLDER}",  # public endpoint: no key needed`,
      ")",
      "",
      ...call,
    ].join("\n");
  }
  const call = responses
    ? [
        "const response = await client.responses.create({",
        `  model: "${input.slug}",`,
        '  input: "Hello!",',
        "});",
        "console.log(response.output_text);",
      ]
    : [
        "const completion = await client.chat.completions.create({",
        `  model: "${input.slug}",`,
        '  messages: [{ role: "user", content: "Hello!" }],',
        "});",
        "console.log(completion.choices[0].message.content);",
      ];
  return [
    'import OpenAI from "openai";',
    "",
    "const client = new OpenAI({",
    `  baseURL: "${base}",`,
    keyed
      ? `  apiKey: "${API_KEY_PLACEHOLDER}",`
      : `  apiKey: "${NO_AUTH_PLACEHOLDER}", // public endpoint: no key needed`,
    "});",
    "",
    ...call,
  ].join("\n");
}
