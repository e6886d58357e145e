// svc init [dir] [--template <name>]: a new project from templates/<name>, with a
// package.json whose SDK dependency is a file: link to this very installation
// (the registry's `svc` is somebody else's package; see DESIGN §3).
import { cp, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { basename, join, relative, resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { svcPackageDir } from "../../sdk/config.js";
import { type Command, parse, stringOption, UsageError } from "../args.js";

export const DEFAULT_TEMPLATE = "ticket-triage";

export function templatesDir(): string {
  return join(svcPackageDir(), "..", "..", "templates");
}

export interface TemplateInfo {
  name: string;
  description: string;
}

export async function listTemplates(): Promise<TemplateInfo[]> {
  const dir = templatesDir();
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: TemplateInfo[] = [];
  for (const name of names.sort()) {
    const manifest = join(dir, name, "template.json");
    const info = await readFile(manifest, "utf8").then(JSON.parse, () => null);
    if (info) out.push({ name, description: String(info.description ?? "") });
  }
  return out;
}

/** The package.json of a new project: the SDK from this installation, nothing from the registry. */
export function projectPackageJson(name: string): Record<string, unknown> {
  return {
    name: npmName(name),
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: { build: "svc build", start: "svc start", dev: "svc dev" },
    dependencies: { svc: `file:${svcPackageDir()}` },
  };
}

/** tsconfig.json for editors: types come from the linked SDK and this installation's @types. */
export function projectTsconfig(): Record<string, unknown> {
  return {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2023", "DOM"],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      typeRoots: ["./node_modules/@types", join(svcPackageDir(), "..", "..", "node_modules", "@types")],
      types: ["node"],
    },
    include: ["src"],
  };
}

function npmName(dirName: string): string {
  const n = dirName
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[-._]+|[-._]+$/g, "");
  return n || "svc-project";
}

async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw err;
  }
}

/**
 * Questions on a terminal. Lines are read through one buffered iterator, so
 * answers typed ahead are kept; end of input takes the defaults.
 */
function prompter() {
  const rl = createInterface({ input: process.stdin, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  return {
    async ask(question: string, fallback: string): Promise<string> {
      process.stdout.write(`${question} (${fallback}) `);
      const next = await lines.next();
      const answer = next.done ? "" : String(next.value).trim();
      if (next.done) process.stdout.write("\n");
      return answer || fallback;
    },
    close: () => rl.close(),
  };
}

export async function initProject(target: string, template: string): Promise<string[]> {
  const source = join(templatesDir(), template);
  const dir = resolve(target);
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const entry of ["src", "data", "README.md"]) {
    const from = join(source, entry);
    if (!(await stat(from).catch(() => null))) continue;
    await cp(from, join(dir, entry), { recursive: true });
    written.push(entry);
  }
  await writeFile(
    join(dir, "package.json"),
    `${JSON.stringify(projectPackageJson(basename(dir)), null, 2)}\n`,
  );
  await writeFile(join(dir, "tsconfig.json"), `${JSON.stringify(projectTsconfig(), null, 2)}\n`);
  await writeFile(join(dir, ".gitignore"), "node_modules/\n.svc/build/\n");
  written.push("package.json", "tsconfig.json", ".gitignore");
  return written;
}

export const initCommand: Command = {
  name: "init",
  summary: "create a new project from a template",
  usage: [
    "Usage: svc init [dir] [--template <name>] [--force]",
    "",
    "Creates a project: package.json, src/svc/index.ts (createTrainer + createSvc),",
    "data/train.jsonl and data/eval.jsonl, README.md. Without a terminal it uses the",
    `defaults (dir: ./<template>, template: ${DEFAULT_TEMPLATE}) and never asks.`,
    "",
    "Options:",
    "  --template <name>  starter project (svc init --list shows them)",
    "  --list             list the templates",
    "  --force            write into a directory that is not empty",
  ].join("\n"),
  async run(argv) {
    const { values, positionals } = parse(
      argv,
      { template: { type: "string", short: "t" }, list: { type: "boolean" }, force: { type: "boolean" } },
      1,
    );
    const templates = await listTemplates();
    if (values.list) {
      for (const t of templates) process.stdout.write(`${t.name.padEnd(16)} ${t.description}\n`);
      return 0;
    }
    const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY);
    let template = stringOption(values, "template");
    let dir = positionals[0];
    if (interactive && (!template || !dir)) {
      const p = prompter();
      try {
        if (!template) {
          const list = templates.map((t) => `  ${t.name.padEnd(16)} ${t.description}`).join("\n");
          process.stdout.write(`Templates:\n${list}\n`);
          template = await p.ask("Template?", DEFAULT_TEMPLATE);
        }
        if (!dir) dir = await p.ask("Directory?", `./${template}`);
      } finally {
        p.close();
      }
    }
    template ??= DEFAULT_TEMPLATE;
    if (!templates.some((t) => t.name === template)) {
      throw new UsageError(
        `--template: unknown template "${template}"; one of ${templates.map((t) => t.name).join(", ")}`,
      );
    }
    dir ??= template;
    if (!values.force && !(await isEmptyDir(resolve(dir)))) {
      throw new Error(`${resolve(dir)} is not empty; pick another directory or pass --force`);
    }
    await initProject(dir, template);
    const rel = relative(process.cwd(), resolve(dir)) || ".";
    process.stdout.write(
      [
        `Created ${rel} from the ${template} template.`,
        "",
        "Next:",
        ...(rel === "." ? [] : [`  cd ${rel}`]),
        "  npm install      # links the svc SDK from this installation; nothing from the registry",
        "  npx svc start    # fine-tune on data/train.jsonl and follow the progress",
        "  npx svc dev      # Studio on http://localhost:4000: jobs, loss chart, playground, endpoints",
        "",
      ].join("\n"),
    );
    return 0;
  },
};
