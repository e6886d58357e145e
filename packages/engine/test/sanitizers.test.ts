// The native code under sanitizers (docs/kernels.md, "Sanitizer and fuzz tests"),
// built by scripts/build-sanitized.mjs into native/build/Sanitize/:
// - the pool stress test (native/test/pool_stress.cc), at -O2 and under
//   ThreadSanitizer (halt_on_error);
// - the addon with AddressSanitizer + UndefinedBehaviorSanitizer, loaded into
//   child node processes (libasan preloaded) that run the kernel conformance
//   tests, the GEMM fuzz, and a short LoRA training run beside a decoding thread.
// A step fails when its process exits non-zero or prints a sanitizer report.
// Skipped only when g++ is missing. SVC_SANITIZE_LONG=1 runs everything longer
// (nightly): more pool jobs, more fuzz cases on a fresh seed, a longer training run.
import assert from "node:assert/strict";
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import { fileURLToPath } from "node:url";
import { needs } from "../src/testing/missing-piece.js";

const engineDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const distDir = join(engineDir, "dist");
const outDir = join(engineDir, "native", "build", "Sanitize");
const cxx = process.env.CXX || "g++";
const long = process.env.SVC_SANITIZE_LONG === "1";

const hasCxx = spawnSync(cxx, ["--version"], { stdio: "ignore" }).status === 0;
const skip = hasCxx ? false : needs("g++", `${cxx} not found: the sanitizer builds need g++`);

const counts = long
  ? {
      jobs: 20_000_000,
      tsanJobs: 2_000_000,
      nested: 200_000,
      gemms: 200,
      tsanGemms: 24,
      fuzz: 40_000,
      steps: 300,
    }
  : { jobs: 2_000_000, tsanJobs: 300_000, nested: 20_000, gemms: 24, tsanGemms: 3, fuzz: 2_000, steps: 12 };
const fuzzSeed = long ? 1 + Math.floor(Math.random() * 1e9) : 1;

const REPORT = /ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer|SUMMARY: \w+Sanitizer/;

/** Runs a command to completion; fails the test on a non-zero exit or a sanitizer report. */
function check(
  t: TestContext,
  what: string,
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): string {
  const started = performance.now();
  // Without NODE_TEST_CONTEXT a child `node --test` runs its files instead of reporting to this runner.
  const { NODE_TEST_CONTEXT: _, ...inherited } = process.env;
  const r: SpawnSyncReturns<string> = spawnSync(cmd, args, {
    cwd: engineDir,
    env: { ...inherited, ...env },
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  const tail = out.split("\n").slice(-60).join("\n");
  if (r.error) assert.fail(`${what}: ${r.error.message}`);
  const report = out.match(REPORT);
  assert.ok(!report, `${what}: sanitizer report (${report?.[0]}):\n${tail}`);
  assert.equal(r.status, 0, `${what}: exit ${r.status ?? r.signal}:\n${tail}`);
  t.diagnostic(`${what}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return out;
}

describe("native code under sanitizers", { skip }, () => {
  test("the sanitizer builds compile", (t) => {
    check(t, "build-sanitized", process.execPath, [join(engineDir, "scripts", "build-sanitized.mjs")]);
    for (const f of ["pool_stress", "pool_stress-tsan", "svc_kernels.node"])
      assert.ok(existsSync(join(outDir, f)), `${f} was not built`);
  });

  const stressArgs = (jobs: number, gemms: number) => [
    `--jobs=${jobs}`,
    `--nested=${counts.nested}`,
    `--gemms=${gemms}`,
  ];

  test("pool stress test at -O2: every task once, none after return, nested calls, SGEMMs from two threads", (t) => {
    const out = check(t, "pool_stress", join(outDir, "pool_stress"), stressArgs(counts.jobs, counts.gemms));
    assert.match(out, /pool_stress: ok/);
  });

  test("pool stress test under ThreadSanitizer reports nothing", (t) => {
    const out = check(
      t,
      "pool_stress-tsan",
      join(outDir, "pool_stress-tsan"),
      stressArgs(counts.tsanJobs, counts.tsanGemms),
      {
        TSAN_OPTIONS: "halt_on_error=1 second_deadlock_stack=1",
      },
    );
    assert.match(out, /pool_stress: ok/);
  });

  describe("the addon under AddressSanitizer and UndefinedBehaviorSanitizer", () => {
    const libasan =
      spawnSync(cxx, ["-print-file-name=libasan.so"], { encoding: "utf8" }).stdout?.trim() ?? "";
    const env = {
      LD_PRELOAD: libasan,
      ASAN_OPTIONS: "detect_leaks=0",
      UBSAN_OPTIONS: "print_stacktrace=1",
      SVC_KERNELS: "native",
      SVC_KERNELS_ADDON: join(outDir, "svc_kernels.node"),
    };

    test("it loads into node", (t) => {
      assert.ok(
        libasan.startsWith("/") && existsSync(libasan),
        `${cxx} has no libasan.so (got "${libasan}")`,
      );
      const probe = `import("${join(distDir, "src/kernels/native.js")}").then((m) => console.log("isas", m.loadNativeKernels().supportedIsas.join(",")))`;
      const out = check(t, "load", process.execPath, ["-e", probe], env);
      assert.match(out, /isas \w+/);
    });

    test("kernel conformance tests and the GEMM fuzz", (t) => {
      const files = ["src/kernels/native.test.js", "src/kernels/gemm-fuzz.test.js"].map((f) =>
        join(distDir, f),
      );
      const out = check(t, "conformance + fuzz", process.execPath, ["--test", ...files], {
        ...env,
        SVC_FUZZ_KERNELS: "native",
        SVC_FUZZ_CASES: String(counts.fuzz),
        SVC_FUZZ_SEED: String(fuzzSeed),
      });
      assert.match(out, /^# fail 0$/m);
      assert.match(out, /^# skipped 0$/m);
      for (const line of out.split("\n").filter((l) => /shapes .*checked on/.test(l)))
        t.diagnostic(line.replace(/^\s*#\s*/, ""));
    });

    test("LoRA training beside a decoding thread", (t) => {
      const out = check(
        t,
        "training",
        process.execPath,
        [join(distDir, "test/sanitizer-train.js"), String(counts.steps)],
        env,
      );
      t.diagnostic(out.trim().split("\n").at(-1) ?? "");
    });
  });
});
