// Kernel selection as a fresh process sees it (getKernels chooses once per process).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { needs } from "../testing/missing-piece.js";
import { loadNativeKernels } from "./native.js";

const indexUrl = new URL("./index.js", import.meta.url).href;

/** Runs getKernels() in a child process with the given environment; returns its choice or error. */
function choose(env: Record<string, string>): {
  name?: string;
  isa?: string;
  ok?: boolean;
  threads?: number;
  error?: string;
} {
  const script = `
    const { getKernels } = await import(${JSON.stringify(indexUrl)});
    try {
      const k = getKernels();
      const c = new Float32Array(4);
      k.matmul(Float32Array.of(1, 2, 3, 4), Float32Array.of(5, 6, 7, 8), c, 2, 2, 2, false, false, false);
      const extra = "threads" in k ? { threads: k.threads } : {};
      console.log(JSON.stringify({ name: k.name, isa: k.isa, ok: c.join() === "19,22,43,50", ...extra }));
    } catch (err) {
      console.log(JSON.stringify({ error: err.message }));
    }`;
  const clean = { ...process.env };
  delete clean.SVC_KERNELS;
  delete clean.SVC_KERNELS_ISA;
  delete clean.SVC_KERNELS_ADDON;
  delete clean.SVC_THREADS;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...clean, ...env },
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

let nativeIsas: readonly string[] = [];
try {
  nativeIsas = loadNativeKernels().supportedIsas;
} catch {}
const noNative = nativeIsas.length === 0 ? needs("native kernels", "native addon not built") : false;

test("by default the native kernels are chosen when the addon loads", { skip: noNative }, () => {
  const got = choose({});
  assert.deepEqual(
    { ...got, threads: undefined },
    { name: "native", isa: nativeIsas[0], ok: true, threads: undefined },
  );
  assert.ok((got.threads ?? 0) >= 1);
});

test("SVC_THREADS caps the native worker pool", { skip: noNative }, () => {
  assert.equal(choose({ SVC_THREADS: "1" }).threads, 1);
});

test("SVC_KERNELS=portable forces the portable kernels", () => {
  const got = choose({ SVC_KERNELS: "portable" });
  assert.equal(got.name, "portable");
  assert.ok(got.isa === "wasm-simd" || got.isa === "js", got.isa);
  assert.equal(got.ok, true);
  assert.deepEqual(choose({ SVC_KERNELS: "portable", SVC_KERNELS_ISA: "js" }), {
    name: "portable",
    isa: "js",
    ok: true,
  });
});

test("a missing addon falls back to the portable kernels", () => {
  const got = choose({ SVC_KERNELS_ADDON: "/nonexistent/svc_kernels.node" });
  assert.equal(got.name, "portable");
  assert.equal(got.ok, true);
});

test("SVC_KERNELS=native with no addon is a clear error", () => {
  const got = choose({ SVC_KERNELS: "native", SVC_KERNELS_ADDON: "/nonexistent/svc_kernels.node" });
  assert.match(got.error ?? "", /native kernels unavailable: cannot load \/nonexistent\/svc_kernels.node/);
});

test("an unknown SVC_KERNELS value is an error", () => {
  assert.match(
    choose({ SVC_KERNELS: "gpu" }).error ?? "",
    /SVC_KERNELS must be "native", "portable" or "auto", got "gpu"/,
  );
});

test("SVC_KERNELS_ISA selects each ISA this CPU supports", { skip: noNative }, () => {
  for (const isa of nativeIsas) {
    const got = choose({ SVC_KERNELS: "native", SVC_KERNELS_ISA: isa });
    assert.deepEqual([got.name, got.isa, got.ok], ["native", isa, true]);
  }
  assert.match(
    choose({ SVC_KERNELS: "native", SVC_KERNELS_ISA: "sse9" }).error ?? "",
    /ISA "sse9" is not available on this machine/,
  );
});
