// The `svc` command line: one module per command, dispatched by the first word.
// Exit codes: 0 success, 1 failure, 2 usage error.
import { SVC_VERSION } from "../index.js";
import { type Command, wantsHelp } from "./args.js";
import { loginCommand, logoutCommand, whoamiCommand } from "./commands/auth.js";
import { buildCommand } from "./commands/build.js";
import { deployCommand } from "./commands/deploy.js";
import { devCommand } from "./commands/dev.js";
import { exportCommand } from "./commands/export.js";
import { initCommand } from "./commands/init.js";
import { jobsCommand } from "./commands/jobs.js";
import { keysCommand } from "./commands/keys.js";
import { modelsCommand } from "./commands/models.js";
import { serverCommand, workerCommand } from "./commands/server.js";
import { startCommand } from "./commands/start.js";
import { describeError } from "./output.js";

export const COMMANDS: Command[] = [
  initCommand,
  buildCommand,
  startCommand,
  devCommand,
  jobsCommand,
  modelsCommand,
  deployCommand,
  exportCommand,
  keysCommand,
  loginCommand,
  logoutCommand,
  whoamiCommand,
  serverCommand,
  workerCommand,
];

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "svc: fine-tune small language models with LoRA and serve them as OpenAI-compatible endpoints",
    "",
    "Usage: svc <command> [options]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Run svc <command> --help for a command's options.",
    "Environment: SVC_CLOUD_API_URL (cloud API base URL; unset: the local server on 127.0.0.1:4100, started on demand)",
  ].join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    const topic = name === "help" ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    process.stdout.write(`${topic ? topic.usage : mainHelp()}\n`);
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-v") {
    process.stdout.write(`${SVC_VERSION}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`svc: unknown command "${name}"; run svc --help for the list\n`);
    return 2;
  }
  if (wantsHelp(rest) && command.name !== "server" && command.name !== "worker") {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    const { message, exitCode } = describeError(err);
    process.stderr.write(`svc ${command.name}: ${message}\n`);
    if (exitCode === 2) process.stderr.write(`run svc ${command.name} --help for usage\n`);
    if (process.env.SVC_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    return exitCode;
  }
}
