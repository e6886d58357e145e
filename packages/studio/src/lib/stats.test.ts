// Reference values computed once with numpy 2.4.6 and scipy 1.17.1:
//   x = np.array(values); sd = x.std(ddof=1); var = x.var(ddof=1)
//   q = scipy.stats.t.ppf(0.975, n - 1) if n <= 31 else 1.96; ci95 = q * sd / sqrt(n)
//   p90 = np.percentile(x, 90); p95 = np.percentile(x, 95)
import assert from "node:assert/strict";
import { test } from "node:test";
import { criticalValue95, percentile, seriesStats } from "./stats.js";

const LONG = [
  3.0, 2.97, 2.94, 2.86, 2.83, 2.75, 2.72, 2.69, 2.61, 2.58, 2.5, 2.47, 2.44, 2.36, 2.33, 2.25, 2.22, 2.19,
  2.11, 2.08, 2.0, 1.97, 1.94, 1.86, 1.83, 1.75, 1.72, 1.69, 1.61, 1.58, 1.5, 1.47, 1.44, 1.36, 1.33, 1.25,
  1.22, 1.19, 1.11, 1.08,
];
const TEN = [2.31, 2.05, 1.98, 1.87, 1.8, 1.71, 1.69, 1.62, 1.58, 1.55];

const NUMPY = {
  ten: {
    n: 10,
    mean: 1.816,
    sd: 0.24056415175813523,
    variance: 0.05787111111111111,
    ci95: 0.17208922728915704,
    p90: 2.0759999999999996,
    p95: 2.1929999999999996,
  },
  n2: {
    n: 2,
    mean: 1.35,
    sd: 0.21213203435596428,
    variance: 0.04500000000000001,
    ci95: 1.9059307104262042,
    p90: 1.47,
    p95: 1.4849999999999999,
  },
  n31: {
    n: 31,
    mean: 2.269354838709677,
    sd: 0.45484015861890764,
    variance: 0.20687956989247308,
    ci95: 0.16683671711547246,
    p90: 2.86,
    p95: 2.955,
  },
  n32: {
    n: 32,
    mean: 2.244375,
    sd: 0.46922680051610505,
    variance: 0.22017379032258064,
    ci95: 0.16257879175410855,
    p90: 2.8569999999999998,
    p95: 2.9535,
  },
  n40: {
    n: 40,
    mean: 2.045,
    sd: 0.5838203095526515,
    variance: 0.34084615384615385,
    ci95: 0.18092778840019189,
    p90: 2.833,
    p95: 2.9415,
  },
};

function close(actual: number, expected: number, label: string) {
  assert.ok(
    Math.abs(actual - expected) <= 1e-12 * Math.max(1, Math.abs(expected)),
    `${label}: ${actual} vs numpy ${expected}`,
  );
}

const CASES: [string, number[], (typeof NUMPY)["ten"]][] = [
  ["10 points (t, 9 df)", TEN, NUMPY.ten],
  ["2 points (t, 1 df)", [1.5, 1.2], NUMPY.n2],
  ["31 points (t, 30 df: last n using t)", LONG.slice(0, 31), NUMPY.n31],
  ["32 points (z = 1.96)", LONG.slice(0, 32), NUMPY.n32],
  ["40 points (z = 1.96)", LONG, NUMPY.n40],
];

for (const [name, values, ref] of CASES) {
  test(`seriesStats matches numpy/scipy: ${name}`, () => {
    const s = seriesStats(values)!;
    assert.equal(s.n, ref.n);
    for (const k of ["mean", "sd", "variance", "ci95", "p90", "p95"] as const) close(s[k], ref[k], k);
  });
}

test("critical value: Student's t quantile up to n = 31, 1.96 beyond", () => {
  close(criticalValue95(2), 12.706204736174694, "t(0.975, 1)");
  close(criticalValue95(31), 2.0422724563012378, "t(0.975, 30)");
  assert.equal(criticalValue95(32), 1.96);
  assert.equal(criticalValue95(1000), 1.96);
  assert.ok(Number.isNaN(criticalValue95(1)));
});

test("a single point has a mean and percentiles but no spread", () => {
  const s = seriesStats([2.5])!;
  assert.equal(s.mean, 2.5);
  assert.equal(s.p90, 2.5);
  assert.ok(Number.isNaN(s.sd) && Number.isNaN(s.variance) && Number.isNaN(s.ci95));
  assert.equal(seriesStats([]), null);
});

test("percentile interpolates linearly between order statistics (numpy default)", () => {
  assert.equal(percentile([4, 1, 3, 2], 50), 2.5);
  assert.equal(percentile([1, 2, 3, 4], 0), 1);
  assert.equal(percentile([1, 2, 3, 4], 100), 4);
  close(percentile([10, 20, 30, 40, 50], 90), 46, "p90");
});
