// A small validator for request bodies: each Check takes the value and its
// path ("hyperparameters.learningRate") and returns the typed value or throws
// a 400 naming the field. Objects reject fields they do not know.
// Text is measured in Unicode code points and may not hold NUL (PostgreSQL
// text cannot store it); integers are safe integers; no string of a JSON body
// holds a lone UTF-16 surrogate. These rules live here once, for every body
// field, query parameter and path segment. Field names are quoted as
// quoteInput writes user input, since a body's unknown key is the client's text.
import { MAX_STORED_INTEGER, type NumericRange, textLength } from "@svc/wire";
import { badRequest, quoteInput } from "./api-error.js";

export type Check<T> = ((value: unknown, path: string) => T) & { optional?: boolean };

type Shape = Record<string, Check<unknown>>;
type Parsed<S extends Shape> = { [K in keyof S]: ReturnType<S[K]> };

const fail = (path: string, what: string): never => {
  throw badRequest(`${quoteInput(path)} ${what}`);
};

/** What a JSON value is, for an error message: "null", "an array", "an object", "a string"… */
export const describe = (value: unknown): string =>
  value === null
    ? "null"
    : Array.isArray(value)
      ? "an array"
      : typeof value === "object"
        ? "an object"
        : typeof value;

const NUL_REFUSED = "must not contain NUL (\\u0000, %00) characters";

/** Refuses text holding NUL: it is never meaningful in a name, and PostgreSQL cannot store it. */
export function refuseNul(value: string, path: string): string {
  return value.includes("\u0000") ? fail(path, NUL_REFUSED) : value;
}

/**
 * The query parameters and path of a request URL, refused when one holds NUL
 * (%00), before any route looks it up. Names the parameter, or "path".
 */
export function refuseNulInUrl(url: string): void {
  const parsed = new URL(url);
  if (/%00/i.test(parsed.pathname)) fail("path", NUL_REFUSED);
  for (const [key, value] of parsed.searchParams) {
    if (`${key}${value}`.includes("\u0000"))
      throw badRequest(`${quoteInput(key)} (query parameter) ${NUL_REFUSED}`);
  }
}

export function string(
  opts: {
    min?: number;
    max?: number;
    pattern?: RegExp;
    patternText?: string;
    /** Text that is never stored (chat message content): a model may write NUL, and its answer comes back as history. */
    allowNul?: boolean;
  } = {},
): Check<string> {
  return (value, path) => {
    if (typeof value !== "string") return fail(path, `must be a string (got ${describe(value)})`);
    if (!opts.allowNul) refuseNul(value, path);
    const min = opts.min ?? 0;
    const length = min > 0 || opts.max !== undefined ? textLength(value) : 0;
    if (length < min)
      return fail(path, min === 1 ? "must not be empty" : `must be at least ${min} characters`);
    if (opts.max !== undefined && length > opts.max)
      return fail(path, `must be at most ${opts.max} characters`);
    if (opts.pattern && !opts.pattern.test(value))
      return fail(path, `must match ${opts.patternText ?? String(opts.pattern)}`);
    return value;
  };
}

export function number(
  opts: { integer?: boolean; min?: number; max?: number; positive?: boolean; exclusiveMin?: number } = {},
): Check<number> {
  const kind = opts.integer
    ? opts.positive
      ? "a positive integer"
      : "an integer"
    : opts.positive
      ? "a positive number"
      : "a number";
  return (value, path) => {
    if (typeof value !== "number" || !Number.isFinite(value)) return fail(path, `must be ${kind}`);
    if (opts.integer && !Number.isInteger(value)) return fail(path, `must be ${kind}`);
    if (opts.positive && value <= 0) return fail(path, `must be ${kind}`);
    if (opts.exclusiveMin !== undefined && value <= opts.exclusiveMin)
      return fail(path, `must be greater than ${opts.exclusiveMin}`);
    if (opts.min !== undefined && value < opts.min) return fail(path, `must be at least ${opts.min}`);
    if (opts.max !== undefined && value > opts.max) return fail(path, `must be at most ${opts.max}`);
    // Past 2^53 an integer is no longer exact: out of range, like any other too large (or small) one.
    if (opts.integer && value > Number.MAX_SAFE_INTEGER)
      return fail(path, `must be at most ${Number.MAX_SAFE_INTEGER} (2^53 - 1)`);
    if (opts.integer && value < -Number.MAX_SAFE_INTEGER)
      return fail(path, `must be at least ${-Number.MAX_SAFE_INTEGER} (-(2^53 - 1))`);
    return value;
  };
}

/** A number within one of the shared ranges (@svc/wire's limits.ts). */
export function inRange(range: NumericRange): Check<number> {
  // "> 0" and integers "≥ 1" read as "a positive number/integer" in messages.
  const positive = range.exclusiveMin === 0 || (range.integer && range.min === 1);
  return number({
    integer: range.integer,
    positive,
    min: positive ? undefined : range.min,
    exclusiveMin: positive ? undefined : range.exclusiveMin,
    max: range.max,
  });
}

/**
 * An integer query parameter within the range, or its default when absent;
 * anything else (a fraction, "1e2", an empty value) is a 400 naming it.
 */
export function integerQuery(
  raw: string | undefined,
  name: string,
  range: NumericRange,
  fallback: number,
): number {
  if (raw === undefined) return fallback;
  const value = decimalInteger(raw);
  if (value === null || value < (range.min ?? 0) || value > range.max)
    throw badRequest(`"${name}" (query parameter) must be an integer from ${range.min ?? 0} to ${range.max}`);
  return value;
}

/**
 * An integer written plainly in decimal ("0", "42", "-7"), or null: no sign
 * on a positive number or on zero, no leading zeros, spaces, exponent,
 * fraction, hex or other digits, at most 2^53 - 1 in size.
 */
function decimalInteger(raw: string): number | null {
  if (!/^(0|-?[1-9][0-9]{0,15})$/.test(raw)) return null;
  const value = Number(raw);
  return Number.isSafeInteger(value) ? value : null;
}

/**
 * The event id a job-event stream resumes after: the Last-Event-ID header or
 * ?lastEventId= in plain decimal from 0 to MAX_STORED_INTEGER; absent is 0
 * (from the start). Anything else ("-0", "+1", " 1", "01", "1e0", empty) is a
 * 400, so a client never silently gets a stream from another point than it asked.
 */
export function parseLastEventId(raw: string | undefined): number {
  if (raw === undefined) return 0;
  const value = decimalInteger(raw);
  if (value === null || value < 0 || value > MAX_STORED_INTEGER)
    throw badRequest(
      `"Last-Event-ID" must be an event id: an integer from 0 to ${MAX_STORED_INTEGER} in plain decimal (got ${quoteInput(raw)})`,
    );
  return value;
}

/** In a `u` pattern a well-formed pair is one code point; only a lone surrogate is \p{Cs}. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The field path of the first string (or object key) in a parsed JSON value
 * that holds a lone UTF-16 surrogate (JSON's "\ud800" escape alone), or null.
 * Such a string is no Unicode text: SQLite would store invalid UTF-8 and
 * PostgreSQL a replacement character, so the two stores would read it back differently.
 */
export function findLoneSurrogate(value: unknown, path = ""): string | null {
  const join = (key: string) => (path ? `${path}.${key}` : key);
  if (typeof value === "string") return LONE_SURROGATE.test(value) ? path || "body" : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findLoneSurrogate(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (LONE_SURROGATE.test(key)) return join(key);
      const found = findLoneSurrogate(item, join(key));
      if (found !== null) return found;
    }
  }
  return null;
}

/** Refuses a parsed JSON body holding a lone surrogate anywhere, naming the field. */
export function refuseLoneSurrogates(body: unknown): void {
  const path = findLoneSurrogate(body);
  if (path !== null)
    fail(path, "must be Unicode text: it holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)");
}

export function boolean(): Check<boolean> {
  return (value, path) => (typeof value === "boolean" ? value : fail(path, "must be true or false"));
}

export function oneOf<const T extends string>(values: readonly T[]): Check<T> {
  return (value, path) =>
    typeof value === "string" && (values as readonly string[]).includes(value)
      ? (value as T)
      : fail(path, `must be one of ${values.map((v) => JSON.stringify(v)).join(", ")}`);
}

export function array<T>(item: Check<T>, opts: { min?: number; max?: number } = {}): Check<T[]> {
  return (value, path) => {
    if (!Array.isArray(value)) return fail(path, `must be an array (got ${describe(value)})`);
    if (opts.min !== undefined && value.length < opts.min)
      return fail(path, opts.min === 1 ? "must not be empty" : `must have at least ${opts.min} items`);
    if (opts.max !== undefined && value.length > opts.max)
      return fail(path, `must have at most ${opts.max} items`);
    return value.map((v, i) => item(v, `${path}[${i}]`));
  };
}

export function optional<T>(check: Check<T>): Check<T | undefined> {
  const f: Check<T | undefined> = (value, path) => (value === undefined ? undefined : check(value, path));
  f.optional = true;
  return f;
}

export function nullable<T>(check: Check<T>): Check<T | null> {
  const f: Check<T | null> = (value, path) => (value === null ? null : check(value, path));
  f.optional = check.optional;
  return f;
}

export function object<S extends Shape>(shape: S): Check<Parsed<S>> {
  return (value, path) => {
    if (typeof value !== "object" || value === null || Array.isArray(value))
      return fail(path || "body", `must be a JSON object (got ${describe(value)})`);
    const record = value as Record<string, unknown>;
    const join = (key: string) => (path ? `${path}.${key}` : key);
    for (const key of Object.keys(record)) {
      // own fields only: "constructor" or "__proto__" is no field of any shape
      if (!Object.hasOwn(shape, key)) fail(join(key), "is not a known field");
    }
    const out: Record<string, unknown> = {};
    for (const [key, check] of Object.entries(shape)) {
      if (record[key] === undefined && !check.optional) fail(join(key), "is required");
      const parsed = check(record[key], join(key));
      if (parsed !== undefined) out[key] = parsed;
    }
    return out as Parsed<S>;
  };
}

/** Picks the object shape by its "kind" field. */
export function byKind<T>(cases: Record<string, Check<T>>): Check<T> {
  const kinds = Object.keys(cases);
  return (value, path) => {
    if (typeof value !== "object" || value === null || Array.isArray(value))
      return fail(path, `must be a JSON object (got ${describe(value)})`);
    const kind = (value as Record<string, unknown>).kind;
    const check = typeof kind === "string" && Object.hasOwn(cases, kind) ? cases[kind] : undefined;
    if (!check)
      return fail(`${path}.kind`, `must be one of ${kinds.map((k) => JSON.stringify(k)).join(", ")}`);
    return check(value, path);
  };
}

export function literal<const T extends string>(expected: T): Check<T> {
  return (value, path) => (value === expected ? expected : fail(path, `must be ${JSON.stringify(expected)}`));
}

/** Runs a check on a whole request body ("" path = the body itself). */
export function parseBody<T>(check: Check<T>, body: unknown): T {
  return check(body, "");
}
