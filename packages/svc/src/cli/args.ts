// Argument parsing shared by the commands: node's util.parseArgs in strict mode,
// with mistakes turned into UsageError (exit code 2) that names the flag.
import { type ParseArgsConfig, parseArgs } from "node:util";

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export type OptionSpec = NonNullable<ParseArgsConfig["options"]>;

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export function parse(
  argv: string[],
  options: OptionSpec,
  maxPositionals = Number.POSITIVE_INFINITY,
): Parsed {
  let parsed: Parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { help: { type: "boolean", short: "h" }, ...options },
      allowPositionals: true,
      strict: true,
    }) as Parsed;
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\. To specify a positional argument.*$/s, ""));
  }
  if (!parsed.values.help && parsed.positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[maxPositionals])}`);
  }
  return parsed;
}

export function stringOption(values: Parsed["values"], name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

export function intOption(
  values: Parsed["values"],
  name: string,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const v = stringOption(values, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new UsageError(`--${name}: expected an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

export function oneOf<T extends string>(
  value: string | undefined,
  name: string,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`--${name}: expected one of ${allowed.join(", ")}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

export function requirePositional(positionals: string[], index: number, what: string): string {
  const v = positionals[index];
  if (v === undefined || v === "") throw new UsageError(`missing ${what}`);
  return v;
}

/** A command of the CLI. run resolves with the exit code. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number>;
}

export function wantsHelp(argv: string[]): boolean {
  return argv.includes("--help") || argv.includes("-h");
}
